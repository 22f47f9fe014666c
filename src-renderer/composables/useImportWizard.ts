import type { BuildResult, CacheDType, InspectResult, SourceSpecInput, TestSplit } from '@api/datasets';
import { boardSourceProblem, BuildRequestSchema, CacheFieldSchema, heldOutTestName, MAX_SPLIT_SEED, MAX_TEST_FRACTION, splitSeedProblem } from '@api/datasets';
import { printable } from '@api/shell-word';
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

/** Kinds that read several files side by side, one field each. */
const MULTI_FILE: readonly SourceKind[] = ['npy', 'idx', 'raw'];
export const isMultiFile = (kind: SourceKind): boolean => MULTI_FILE.includes(kind);

/** The next file's field name: features x, labels y, then field3, field4… (names already taken are skipped). */
export function nextFieldName(taken: string[]): string {
  for (const name of ['x', 'y']) if (!taken.includes(name)) return name;
  for (let i = taken.length + 1; ; i++) if (!taken.includes(`field${i}`)) return `field${i}`;
}

const FIELD_NAME_RULE = 'use letters, digits, _ . - and start with a letter or _';

const baseName = (path: string): string => path.split('/').pop() ?? path;
/** A file's name as a message shows it: from the workspace, so its control characters and bidi marks escaped. */
const shownName = (path: string): string => printable(baseName(path));

/**
 * Why the chosen files cannot be inspected yet, naming the file and the value (the contract would
 * answer with its schema's path instead); null when they can.
 */
export function fieldProblem(files: { path: string; field: string }[]): string | null {
  const seen = new Map<string, string>();
  for (const f of files) {
    const file = shownName(f.path);
    const name = f.field.trim();
    if (name === '') return `Give ${file} a field name (features are usually x, labels y).`;
    if (!CacheFieldSchema.shape.name.safeParse(name).success) return `Field name '${name}' of ${file}: ${FIELD_NAME_RULE}.`;
    const other = seen.get(name);
    if (other) return `Field name '${name}' is given to both ${other} and ${file}: each file needs its own.`;
    seen.set(name, file);
  }
  return null;
}

/**
 * Why the fields step cannot build yet, naming the value (the contract would answer with a schema path
 * such as `params.fieldMap.0.to`); null when it can. Each rule is the contract's own schema.
 */
export function buildProblem(settings: {
  name: string;
  shardMiB: number;
  sampleRatio: number;
  mapping: { from: string; to: string }[];
  testSplit?: TestSplitChoice;
}): string | null {
  const { name, shardMiB, sampleRatio, mapping } = settings;
  if (name.trim() === '') return 'Give the dataset a name.';
  if (!BuildRequestSchema.shape.name.safeParse(name).success) {
    return `Name '${name}': use letters, digits, . _ - (not starting with '.'), at most 64 characters.`;
  }
  const seen = new Map<string, string>();
  for (const m of mapping) {
    if (m.to.trim() === '') return `Give field ${m.from} a name to be cached as.`;
    if (!CacheFieldSchema.shape.name.safeParse(m.to).success) return `Field ${m.from} cached as '${m.to}': ${FIELD_NAME_RULE}.`;
    const other = seen.get(m.to);
    if (other !== undefined) return `Fields ${other} and ${m.from} are both cached as '${m.to}': each needs its own name.`;
    seen.set(m.to, m.from);
  }
  if (!Number.isFinite(shardMiB) || shardMiB < 1) return 'Shard size: a number of MiB, at least 1.';
  if (!Number.isFinite(sampleRatio) || sampleRatio <= 0 || sampleRatio > 1) return 'Benchmark sample ratio: above 0 and at most 1 (1 reads every record).';
  return settings.testSplit ? testSplitProblem(settings.testSplit) : null;
}

/** The wizard's held-out test split: on or off, the share in percent (as typed) and the seed. */
export interface TestSplitChoice {
  on: boolean;
  percent: number;
  seed: number;
}

/** Why the held-out split cannot be asked for, naming the value as typed; null when it can (or is off). */
export function testSplitProblem(split: TestSplitChoice): string | null {
  if (!split.on) return null;
  const most = MAX_TEST_FRACTION * 100;
  // An emptied number field holds '' (v-model.number): said as such, not as 0.
  if (typeof split.percent !== 'number' || Number.isNaN(split.percent)) return `Test split: give the share of the rows to hold out, more than 0% and at most ${most}% (e.g. 20).`;
  if (!(split.percent > 0 && split.percent <= most)) return `Test split ${split.percent}%: hold out more than 0% and at most ${most}% of the rows (e.g. 20).`;
  if (typeof split.seed !== 'number' || splitSeedProblem(split.seed) !== null) {
    return `Split seed ${split.seed === ('' as unknown) ? '(empty)' : String(split.seed)}: a whole number from 0 to ${MAX_SPLIT_SEED}.`;
  }
  return null;
}

/** The build request's testSplit for the wizard's choice; undefined when it is off. */
export function testSplitRequest(split: TestSplitChoice): TestSplit | undefined {
  return split.on ? { fraction: split.percent / 100, seed: split.seed } : undefined;
}

/** Why a raw dump's per-record shape (`104,9,9`, empty for one value) is not one, naming the file; null when it is. */
export function shapeProblem(file: { path: string; shape: string }): string | null {
  if (file.shape.trim() === '') return null;
  const bad = file.shape.split(',').find((d) => !/^\s*[1-9]\d*\s*$/.test(d));
  return bad === undefined ? null : `Per-record shape '${file.shape}' of ${shownName(file.path)}: '${bad.trim()}' is not a positive whole number (e.g. 104,9,9; empty for one value).`;
}

/** Decimals that show v to 4 places without trailing zeros (0 for a whole number). */
const decimalsOf = (v: number): number => (Number.isInteger(v) ? 0 : (v.toFixed(4).split('.')[1] ?? '').replace(/0+$/, '').length);

/**
 * One record's values in one style: whole numbers as they are when all are whole, else every value to the same
 * decimals (at most 4), so "0" never stands beside "0.0000" (issue 41's walk); a non-zero value too small for 4
 * places, or too large to read, in exponent form rather than as 0.0000.
 */
function valueFormatter(values: readonly number[]): (v: number) => string {
  const places = Math.max(0, ...values.filter(Number.isFinite).map(decimalsOf));
  return (v) => {
    if (!Number.isFinite(v)) return String(v);
    if (v !== 0 && (Math.abs(v) < 5e-5 || Math.abs(v) >= 1e9)) return v.toExponential(2);
    return v.toFixed(places);
  };
}

/**
 * One field's first values in the preview; a label field with class names
 * (a CSV's text labels) shows each index with its class: `2 (virginica)`.
 * The class names come from the file: shown through printable, so a planted
 * control character, line separator or bidi mark is seen, never acted on.
 * `styleFrom`: the values the style is taken from (the field's values in every shown record, so its rows agree).
 */
export function previewText(values: number[], classes?: string[], styleFrom: readonly number[] = values): string {
  const format = valueFormatter(styleFrom.filter((v) => classes?.[v] === undefined));
  return values.map((v) => (classes?.[v] !== undefined ? `${v} (${printable(classes[v])})` : format(v))).join(', ');
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
  /** The chosen CSV's header columns, read by the main process when the file is chosen. */
  const csvColumns = ref<string[]>([]);
  const csvLabel = ref('');
  /** int32: the label is a class (text labels become class indices); float32: a number to regress. */
  const csvLabelDtype = ref<'int32' | 'float32'>('int32');
  const readingHeader = ref(false);
  const boardRecords = ref(2000);
  const boardSeed = ref(0);
  const name = ref('');
  const shardMiB = ref(1024);
  const sampleRatio = ref(1);
  /** Off by default; on, the build writes `<name>-test` too, which New run tests on. */
  const testSplit = ref<TestSplitChoice>({ on: false, percent: 20, seed: 0 });
  const inspected = shallowRef<InspectResult | null>(null);
  const mapping = ref<{ from: string; to: string; dtype: CacheDType }[]>([]);
  const progress = computed(() => datasets.buildProgress);
  const built = computed(() => datasets.built);
  /** Inspecting; a build and a loader benchmark are their stores' jobs. */
  const working = ref(false);
  const busy = computed(() => working.value || datasets.building || loader.running);
  const error = ref<string | null>(null);
  /**
   * What a build under this name replaces, said before the build: the newest cache of a name is the dataset, and an
   * earlier import's held-out test set goes with it (it would hold records the new one trains on).
   */
  const replaces = computed((): string | null => {
    const own = datasets.list.find((d) => d.name === name.value.trim() && d.split?.part !== 'test');
    if (!own) return null;
    const test = datasets.list.find((d) => d.name === heldOutTestName(own.name) && d.split?.part === 'test');
    return (
      `A dataset named ${printable(own.name)} is in the workspace (${own.records.toLocaleString()} records, built ${own.createdAt.slice(0, 10)}): ` +
      `building replaces it${test ? `, and its held-out test set ${printable(test.name)} with it` : ''}, unless the source and settings are the same. ` +
      'Choose another name to keep both.'
    );
  });

  function showBuild(): void {
    step.value = 'build';
    error.value = null;
    if (datasets.buildName) name.value = datasets.buildName;
  }
  if (datasets.building) showBuild();
  // A loader benchmark of the cache this wizard built (re-attached, or started from its row or another window) is
  // shown at its step, live, with Cancel. One of another cache has its own card: a half-done import stays where it is,
  // and the step's "Benchmark again" never measures a cache other than the one shown.
  const measuresOurs = () => loader.dataset !== null && loader.dataset === built.value?.dataset.id;
  if (loader.running && measuresOurs()) step.value = 'benchmark';
  watch(
    () => [loader.running, loader.dataset] as const,
    ([now]) => {
      if (now && measuresOurs()) step.value = 'benchmark';
      else if (step.value === 'benchmark' && !measuresOurs()) step.value = built.value ? 'build' : 'source';
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
        // One file keeps the single-file form, so its cache matches `cache build file.npy:field`.
        return files.value.length > 1
          ? { kind: 'npy-fields', files: files.value.map((f) => ({ path: f.path, field: f.field.trim() })) }
          : { kind: 'npy', path: first?.path ?? '', field: first?.field.trim() || 'x' };
      case 'npz':
        return { kind: 'npz', path: first?.path ?? '' };
      case 'csv':
        return { kind: 'csv', path: first?.path ?? '', label: csvLabel.value, labelDtype: csvLabelDtype.value };
      case 'idx':
        return { kind: 'idx', files: files.value.map((f) => ({ path: f.path, field: f.field.trim() })) };
      case 'raw':
        return {
          kind: 'raw',
          files: files.value.map((f) => ({
            path: f.path,
            field: f.field.trim(),
            dtype: f.dtype,
            shape: f.shape.trim() === '' ? [] : f.shape.split(',').map((d) => Number(d.trim())),
          })),
        };
      default: // synthetic-board
        return { kind: 'synthetic-board', records: boardRecords.value, seed: boardSeed.value };
    }
  });

  /**
   * Adds a chosen file. Kinds read side by side (.npy, IDX, raw dumps) collect one file per field; a file
   * of another kind starts over with it. A CSV's header is read at once, to offer its columns as the label.
   */
  function addFile(path: string): void {
    const base = baseName(path);
    const own = kindForFile(base);
    error.value = null;
    if (files.value.some((f) => f.path === path)) {
      error.value = `${base} is already chosen: pick another file for the next field.`;
      return;
    }
    const keep = files.value.length > 0 && isMultiFile(kind.value) && (own === kind.value || kind.value === 'raw');
    if (!keep) {
      files.value = [];
      kind.value = own;
      csvLabelDtype.value = 'int32';
    }
    const field = nextFieldName(files.value.map((f) => f.field.trim()));
    files.value = [...files.value, { path, field, dtype: 'uint8', shape: '' }];
    if (!keep) name.value = base.replace(/\.[^.]+$/, '').replace(/[^A-Za-z0-9_.-]/g, '_') || 'dataset';
    if (kind.value === 'csv') void readHeader(path);
  }

  /** The CSV's columns, and its likely label column as the default choice. */
  let headerRequest = 0;
  async function readHeader(path: string): Promise<void> {
    const request = ++headerRequest;
    csvColumns.value = [];
    csvLabel.value = '';
    readingHeader.value = true;
    try {
      const header = await client.call('datasets.csvHeader', { path });
      // A later choice wins over a slow answer for an earlier file.
      if (request !== headerRequest) return;
      csvColumns.value = header.columns;
      csvLabel.value = header.suggestedLabel;
    } catch (err) {
      if (request === headerRequest) error.value = errorText(err);
    } finally {
      if (request === headerRequest) readingHeader.value = false;
    }
  }

  function removeFile(i: number): void {
    files.value = files.value.filter((_, j) => j !== i);
    error.value = null; // it was about the files as they were (a removed CSV's bad line stayed on screen)
    if (files.value.length === 0) {
      headerRequest++;
      readingHeader.value = false;
      csvColumns.value = [];
      csvLabel.value = '';
    }
  }

  // A kind chosen by hand after the files: a single-file kind keeps the first file; a CSV needs its header.
  watch(kind, (now) => {
    if (!isMultiFile(now) && files.value.length > 1) files.value = files.value.slice(0, 1);
    if (now === 'csv' && files.value[0] && csvColumns.value.length === 0 && !readingHeader.value) void readHeader(files.value[0].path);
  });

  /** Why Inspect cannot run yet, in words; null when it can. */
  const sourceProblem = computed((): string | null => {
    if (kind.value === 'synthetic-board') {
      const problem = boardSourceProblem(boardRecords.value, boardSeed.value);
      return problem === null ? null : `The ${problem}.`;
    }
    if (files.value.length === 0) return 'Choose a file from the workspace.';
    if (kind.value === 'csv') {
      if (readingHeader.value) return 'Reading the header…';
      return csvLabel.value ? null : 'Choose the label column.';
    }
    if (!isMultiFile(kind.value)) return null;
    return fieldProblem(files.value) ?? (kind.value === 'raw' ? files.value.map(shapeProblem).find((p) => p !== null) ?? null : null);
  });

  async function inspect(): Promise<void> {
    if (sourceProblem.value) {
      error.value = sourceProblem.value;
      return;
    }
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

  /** Why Build cannot run yet, in words; null when it can. */
  const settingsProblem = computed(() =>
    buildProblem({ name: name.value, shardMiB: shardMiB.value, sampleRatio: sampleRatio.value, mapping: mapping.value, testSplit: testSplit.value }),
  );

  async function build(): Promise<void> {
    if (datasets.building) return;
    if (settingsProblem.value) {
      error.value = settingsProblem.value;
      return;
    }
    error.value = null;
    step.value = 'build';
    const fieldMap = mapping.value.filter((m, i) => m.to !== m.from || m.dtype !== inspected.value?.fields[i].dtype);
    const split = testSplitRequest(testSplit.value);
    const result = await datasets.build({ source: source.value, name: name.value, shardBytes: Math.round(shardMiB.value * 2 ** 20), fieldMap, ...(split ? { testSplit: split } : {}) });
    if (result) options.onBuilt?.(result);
    else error.value = datasets.buildError;
  }

  /** Stops the build at the next chunk; nothing is published. */
  async function cancel(): Promise<void> {
    await datasets.cancelBuild();
  }

  /** Measures the loader on the cache just built: cached and from the source files, at 0, 1 and 2 workers. */
  async function benchmark(): Promise<void> {
    if (!built.value || loader.running) return;
    error.value = null;
    step.value = 'benchmark';
    await loader.sweep(built.value.dataset, sampleRatio.value);
  }

  function restart(): void {
    step.value = 'source';
    files.value = [];
    headerRequest++;
    readingHeader.value = false;
    csvColumns.value = [];
    csvLabel.value = '';
    csvLabelDtype.value = 'int32';
    inspected.value = null;
    datasets.clearBuild();
    loader.clear();
    name.value = '';
    error.value = null;
  }

  return {
    step, kind, files, csvColumns, csvLabel, csvLabelDtype, readingHeader, sourceProblem, settingsProblem, boardRecords, boardSeed, name, shardMiB, sampleRatio, testSplit,
    inspected, mapping, progress, built, busy, error, replaces,
    addFile, removeFile, inspect, build, cancel, benchmark, restart,
  };
}
