import type { BuildProgress, BuildResult, DatasetSummary } from '@api/datasets';
import type { JobInfo } from '@api/jobs';
import type { MethodParams } from '@api/methods';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { useLoader } from './load-state';
import { useApiClient } from '../transport/client-instance';

/**
 * The dataset caches of the workspace, and the cache build followed: started by the import wizard,
 * or running when the window opened (a reload, another window), re-attached through the jobs store.
 */
export const useDatasetsStore = defineStore('datasets', () => {
  /** Every cache, with its problem when it does not open. */
  const list = shallowRef<DatasetSummary[]>([]);
  const { loading, error, run: refresh } = useLoader(async () => {
    list.value = await useApiClient().call('datasets.list', {});
  });
  /** Last verify result per dataset id: 'ok' or the problems found. */
  const verified = ref<Record<string, string>>({});

  /** The build's latest progress (kept after its end, 'done' when it published). */
  const buildProgress = shallowRef<BuildProgress | null>(null);
  /** What the last build published; null while one runs or after it failed. */
  const built = shallowRef<BuildResult | null>(null);
  /** True from Build (or attaching) to the build's end. */
  const building = ref(false);
  /** The name of the cache being built, from its request (a re-attached build shows what it builds). */
  const buildName = ref<string | null>(null);
  const buildJob = useJob({ 'datasets.progress': (p) => (buildProgress.value = p) });

  /** Recomputes every shard's checksum. */
  async function verify(id: string): Promise<void> {
    verified.value = { ...verified.value, [id]: 'checking…' };
    try {
      const r = await useApiClient().call('datasets.verify', { id });
      verified.value = { ...verified.value, [id]: r.ok ? `ok (${r.seconds.toFixed(1)} s)` : r.problems.join('; ') };
    } catch (err) {
      verified.value = { ...verified.value, [id]: errorText(err) };
    }
  }

  async function remove(id: string): Promise<void> {
    let failure: string | null = null;
    try {
      await useApiClient().call('datasets.remove', { id });
    } catch (err) {
      failure = errorText(err);
    }
    await refresh();
    // The refresh clears the error; a failed remove must stay on screen.
    if (failure) error.value = failure;
  }

  /** Follows one build while `follow` lasts; the list is read again when it ends. */
  async function watchBuild(name: string | null, follow: () => Promise<BuildResult | null>): Promise<BuildResult | null> {
    building.value = true;
    buildName.value = name;
    buildProgress.value = null;
    built.value = null;
    try {
      built.value = await follow();
      return built.value;
    } finally {
      building.value = false;
      await refresh();
    }
  }

  /** Builds a cache, following its progress; null when it failed or was cancelled (see buildError). */
  async function build(request: Omit<MethodParams<'datasets.build'>, 'jobId'>): Promise<BuildResult | null> {
    if (building.value) return null;
    return watchBuild(request.name, () => buildJob.start('datasets.build', request));
  }

  /** Follows a build started elsewhere (before a reload, in another window) to its end. */
  async function attachBuild(info: JobInfo): Promise<void> {
    if (building.value || info.method !== 'datasets.build') return;
    const name = (info.request as { name?: unknown }).name;
    await watchBuild(typeof name === 'string' ? name : null, () => buildJob.attach({ ...info, method: 'datasets.build' }));
  }
  useJobsStore().adopt('dataset', null, (info) => void attachBuild(info));

  /** Stops the build at the next chunk; nothing is published. */
  async function cancelBuild(): Promise<void> {
    await buildJob.cancel();
  }

  /** Forgets the last build's progress and result (a new import starts); not while one runs. */
  function clearBuild(): void {
    if (building.value) return;
    buildProgress.value = null;
    built.value = null;
    buildJob.error.value = null;
  }

  return {
    list, loading, error, verified, refresh, verify, remove,
    buildProgress, built, building, buildName, buildError: buildJob.error, buildCancelling: buildJob.cancelling, build, attachBuild, cancelBuild, clearBuild,
  };
});
