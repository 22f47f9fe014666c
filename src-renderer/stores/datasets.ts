import type { BuildProgress, BuildResult, DatasetSummary } from '@api/datasets';
import { ApiError } from '@api/errors';
import type { JobInfo } from '@api/jobs';
import type { MethodParams } from '@api/methods';
import { SOURCES_FOLDER, type SourceFileAdded } from '@api/source-uploads';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { useLoader } from './load-state';
import { useApiClient } from '../transport/client-instance';
import type { UploadOptions, UploadProgress } from '../transport/source-uploader';

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

  /** The sources/ folder's path on the machine that serves the workspace; null until app.info answered. */
  const sourcesFolder = ref<string | null>(null);
  /** The transfer of data files into sources/ under way (kept in the store, so it goes on while another area is open). */
  const uploadProgress = shallowRef<UploadProgress | null>(null);
  const uploading = ref(false);
  const uploadError = ref<string | null>(null);
  /** What Cancel stopped, said as a fact rather than an error. */
  const uploadCancelled = ref<string | null>(null);
  /** The files the last transfer added; the wizard chooses them. */
  const uploaded = shallowRef<SourceFileAdded[]>([]);
  /** Counts transfers that added files: the wizard's file list reads sources/ again when it changes. */
  const sourcesChanged = ref(0);
  let uploadControl: AbortController | null = null;

  async function loadSourcesFolder(): Promise<void> {
    if (sourcesFolder.value) return;
    try {
      const { workspace } = await useApiClient().call('app.info', {});
      const sep = workspace.includes('\\') && !workspace.includes('/') ? '\\' : '/';
      sourcesFolder.value = `${workspace.replace(/[\\/]+$/, '')}${sep}${SOURCES_FOLDER}`;
    } catch {
      // The page still works; it names the folder as workspace/sources.
    }
  }

  /** Sends data files into sources/ (the browser's picked or dropped files, or the desktop app's own dialog). */
  async function upload(files: readonly File[] | 'dialog'): Promise<SourceFileAdded[]> {
    const uploader = useApiClient().transport.sourceUploads;
    if (uploading.value || !uploader) return [];
    uploading.value = true;
    uploadError.value = null;
    uploadCancelled.value = null;
    uploadProgress.value = null;
    uploaded.value = [];
    uploadControl = new AbortController();
    const options: UploadOptions = { onProgress: (p) => (uploadProgress.value = p), signal: uploadControl.signal };
    try {
      const added = uploader.picks === 'page' ? (files === 'dialog' ? [] : await uploader.send(files, options)) : await uploader.chooseAndCopy(options);
      uploaded.value = added;
      return added;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'E_CANCELLED') uploadCancelled.value = err.message;
      else uploadError.value = errorText(err);
      return [];
    } finally {
      uploading.value = false;
      uploadControl = null;
      // A cancelled or failed transfer may have added the files before it.
      sourcesChanged.value++;
    }
  }

  /** Stops the transfer: the file being sent is not added. */
  function cancelUpload(): void {
    uploadControl?.abort();
  }

  return {
    list, loading, error, verified, refresh, verify, remove,
    buildProgress, built, building, buildName, buildError: buildJob.error, buildCancelling: buildJob.cancelling, build, attachBuild, cancelBuild, clearBuild,
    sourcesFolder, uploadProgress, uploading, uploadError, uploadCancelled, uploaded, sourcesChanged, loadSourcesFolder, upload, cancelUpload,
  };
});
