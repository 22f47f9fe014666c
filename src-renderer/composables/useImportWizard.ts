import type { BuildResult, CacheDType, InspectResult, SourceSpecInput } from '@api/datasets';
import { computed, ref, shallowRef, watch } from 'vue';

import { useDatasetsStore } from '../stores/datasets';
import { errorText } from '../stores/error-text';
import { useLoaderBenchStore } from '../stores/loader-bench';
import { useApiClient } from '../transport/client-instance';

export type SourceKind = 'npy' | 'npz' | 'csv' | 'idx' | 'raw' | 'synthetic-board';
export type WizardStep = 'source' | 'fields' | 'build' | 'benchmark';

/** One chosen file: its field name, and for raw dumps the dtype and per-record shape. */
export interface ChosenFile {
  path: string;
  field: string;
  dtype: CacheDType;
  shape: string;
}

/** Picks the importer from a file name; anything unknown is treated as a headerless dump. */
export function kindForFile(name: string): SourceKind {
  if (/\.npz$/i.test(name)) return 'npz';
  if (/\.npy$/i.test(name)) return 'npy';
  if (/\.csv$/i.test(name)) return 'csv';
  if (/idx\d-ubyte(\.gz)?$|\.idx(\.gz)?$/i.test(name)) return 'idx';
  return 'raw';
}

const formatValue = (v: number): string => (Number.isInteger(v) ? String(v) : v.toFixed(4));

/**
 * One field's first values in the preview; a label field with class names
 * (a CSV's text labels) shows each index with its class: `2 (virginica)`.
 */
export function previewText(values: number[], classes?: string[]): string {
  return values.map((v) => (classes?.[v] !== undefined ? `${v} (${classes[v]})` : formatValue(v))).join(', ');
}

/**
 * State and steps of the caching wizard: source -> inspect and map fields -> build -> benchmark.
 * The build is the datasets store's job, so a build running when the page opened (a reload, another
 * window) is shown at its step, live, with Cancel.
 */
export function useImportWizard(options: { onBuilt?: (r: BuildResult) => void } = {}) {
  const client = useApiClient();
  const datasets = useDatasetsStore();
  const loader = useLoaderBenchStore();
  const step = ref<WizardStep>('source');
  const kind = ref<SourceKind>('npy');
  const files = ref<ChosenFile[]>([]);
  const csvLabel = ref('');
  const boardRecords = ref(2000);
  const boardSeed = ref(0);
  const name = ref('');
  const shardMiB = ref(1024);
  const sampleRatio = ref(1);
  const inspected = shallowRef<InspectResult | null>(null);
  const mapping = ref<{ from: string; to: string; dtype: CacheDType }[]>([]);
  const progress = computed(() => datasets.buildProgress);
  const built = computed(() => datasets.built);
  /** Inspecting; a build and a loader benchmark are their stores' jobs. */
  const working = ref(false);
  const busy = computed(() => working.value || datasets.building || loader.running);
  const error = ref<string | null>(null);

  function showBuild(): void {
    step.value = 'build';
    error.value = null;
    if (datasets.buildName) name.value = datasets.buildName;
  }
  if (datasets.building) showBuild();
  // A loader benchmark re-attached (or started in another window) is shown at its step, live, with Cancel.
  if (loader.running) step.value = 'benchmark';
  watch(
    () => loader.running,
    (now) => {
      if (now) step.value = 'benchmark';
    },
  );
  // A build re-attached (or started in another window) takes the wizard to its step; its failure is said here.
  watch(
    () => datasets.building,
    (now) => {
      if (now) showBuild();
      else if (datasets.buildError) error.value = datasets.buildError;
    },
  );

  const source = computed((): SourceSpecInput => {
    const first = files.value[0];
    switch (kind.value) {
      case 'npy':
        return { kind: 'npy', path: first?.path ?? '', field: first?.field || 'x' };
      case 'npz':
        return { kind: 'npz', path: first?.path ?? '' };
      case 'csv':
        return { kind: 'csv', path: first?.path ?? '', label: csvLabel.value };
      case 'idx':
        return { kind: 'idx', files: files.value.map((f) => ({ path: f.path, field: f.field })) };
      case 'raw':
        return {
          kind: 'raw',
          files: files.value.map((f) => ({
            path: f.path,
            field: f.field,
            dtype: f.dtype,
            shape: f.shape.trim() === '' ? [] : f.shape.split(',').map((d) => Number(d.trim())),
          })),
        };
      default: // synthetic-board
        return { kind: 'synthetic-board', records: boardRecords.value, seed: boardSeed.value };
    }
  });

  function addFile(path: string): void {
    const base = path.split('/').pop() ?? path;
    if (files.value.length === 0) kind.value = kindForFile(base);
    const multi = kind.value === 'idx' || kind.value === 'raw';
    const field = files.value.length === 0 ? 'x' : files.value.length === 1 ? 'y' : `field${files.value.length}`;
    const entry: ChosenFile = { path, field, dtype: 'uint8', shape: '' };
    files.value = multi ? [...files.value, entry] : [entry];
    if (!name.value) name.value = base.replace(/\.[^.]+$/, '').replace(/[^A-Za-z0-9_.-]/g, '_') || 'dataset';
  }

  function removeFile(i: number): void {
    files.value = files.value.filter((_, j) => j !== i);
  }

  async function inspect(): Promise<void> {
    working.value = true;
    error.value = null;
    try {
      inspected.value = await client.call('datasets.inspect', { source: source.value });
      mapping.value = inspected.value.fields.map((f) => ({ from: f.name, to: f.name, dtype: f.dtype }));
      if (!name.value && kind.value === 'synthetic-board') name.value = 'board';
      step.value = 'fields';
    } catch (err) {
      error.value = errorText(err);
    } finally {
      working.value = false;
    }
  }

  async function build(): Promise<void> {
    if (datasets.building) return;
    error.value = null;
    step.value = 'build';
    const fieldMap = mapping.value.filter((m, i) => m.to !== m.from || m.dtype !== inspected.value?.fields[i].dtype);
    const result = await datasets.build({ source: source.value, name: name.value, shardBytes: Math.round(shardMiB.value * 2 ** 20), fieldMap });
    if (result) options.onBuilt?.(result);
    else error.value = datasets.buildError;
  }

  /** Stops the build at the next chunk; nothing is published. */
  async function cancel(): Promise<void> {
    await datasets.cancelBuild();
  }

  /** Measures the loader on the cache just built: cached and from the source files, at 0, 1 and 2 workers. */
  async function benchmark(): Promise<void> {
    if (!built.value) return;
    error.value = null;
    step.value = 'benchmark';
    await loader.start({
      dataset: built.value.dataset.id,
      batchSize: 256,
      workers: [0, 1, 2],
      prefetch: [2],
      sampleRatio: sampleRatio.value,
      maxSeconds: 1,
    });
  }

  function restart(): void {
    step.value = 'source';
    files.value = [];
    inspected.value = null;
    datasets.clearBuild();
    loader.clear();
    name.value = '';
    error.value = null;
  }

  return {
    step, kind, files, csvLabel, boardRecords, boardSeed, name, shardMiB, sampleRatio,
    inspected, mapping, progress, built, busy, error,
    addFile, removeFile, inspect, build, cancel, benchmark, restart,
  };
}
