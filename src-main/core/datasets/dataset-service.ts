import path from 'node:path';

import type {
  BuildProgress,
  BuildRequest,
  BuildResult,
  CacheManifest,
  CsvHeader,
  DatasetSummary,
  InspectResult,
  LoaderBenchProgress,
  LoaderBenchRequest,
  LoaderBenchResult,
  LoaderBenchRow,
  LoaderPath,
  HeldOutSplit,
  SourceSpec,
  TestSplit,
} from '../../api/datasets';
import type { TelemetrySummary } from '../../api/telemetry';
import { DEFAULT_SHARD_BYTES, heldOutTestName, recordsDrawn, SourceSpecSchema, testSetProblem } from '../../api/datasets';
import { ApiError, withinWorkspaceRelative } from '../../api/errors';
import { newJobId } from '../../api/ids';
import type { DataSource } from '../../api/training';
import type { EngineClient } from '../../engine/engine-client';
import type { HostSource, HostTrainData } from '../../engine/host-protocol';
import { FairSlots } from '../common/fair-slots';
import { mergeTelemetry } from '../stats/benchmark-summary';
import type { EventHub } from '../common/event-hub';
import type { TelemetryService } from '../telemetry/telemetry-service';
import { createRun } from '../workspace/run-store';
import { resolveRealInside, type Workspace } from '../workspace/workspace';
import type { BuildSettings } from './cache-builder';
import { buildCache, plannedCacheId } from './cache-builder';
import { heldOutNamesakes, listDatasets, namesakes, removeDataset, resolveDataset, retireDatasets, verifyDataset } from './cache-store';
import { decode } from './dtype-codec';
import { EXAMPLE_TEST_RECORDS, EXAMPLE_TRAIN_RECORDS, writeBoardDumps } from './example-board';
import { defaultFashionMnistDir, fashionMnistDir, fashionMnistSpecs, idxFolderName } from './fashion-mnist';
import { heldOutPart } from './held-out-split';
import { readCsvHeader } from './importers/csv-header';
import { realSourcePath } from './importers/source-file';
import { openSource } from './importers/open-source';
import type { RecordSource } from './importers/record-source';
import { recordBytes, recordValues } from './importers/record-source';

export interface AccessOptions {
  /** The CLI may read anywhere the user points it; UI requests stay inside the workspace. */
  allowPathsOutsideWorkspace?: boolean;
  /** Aborts building or reading the caches (a training run cancelled while its data is prepared): E_CANCELLED. */
  signal?: AbortSignal;
  /** Build progress of the caches a training run needs, as they are made. */
  onProgress?: (p: BuildProgress) => void;
}

const PREVIEW_RECORDS = 5;
const PREVIEW_VALUES = 8;
/** Bytes a preview reads at most (at least one record): records are read whole, and a few values of each are shown. */
const PREVIEW_BYTES = 4 << 20;

/** Importing, caching, listing, verifying and benchmarking datasets. */
export class DatasetService {
  private readonly jobs = new Map<string, AbortController>();
  /** Builds past their last cancellation point (BuildOptions.closeToCancel): a cancel now is answered not taken. */
  private readonly closed = new Set<string>();
  /**
   * Previews run one at a time, each may hold a record (up to MAX_RECORD_BYTES), and callers take turns: in one queue,
   * one window's 62 queued previews kept every other window's waiting 3 s (re-attack 15).
   */
  private readonly previews = new FairSlots(1);

  constructor(
    private readonly workspace: Workspace,
    private readonly engine: EngineClient,
    private readonly events: EventHub,
    private readonly telemetry: TelemetryService,
  ) {}

  /**
   * Resolves a source file's path: inside the workspace for UI requests, anywhere for the CLI. It is the real
   * path confinement checked, and importers open it only as that file (openSourceFile), so a folder swapped for a
   * link after the check cannot lead a read outside.
   */
  private confinePath(file: string, access: AccessOptions): string {
    return access.allowPathsOutsideWorkspace ? realSourcePath(path.resolve(file)) : resolveRealInside(this.workspace.root, file);
  }

  /** Resolves a source's paths, as confinePath does each. */
  confine(spec: SourceSpec, access: AccessOptions): SourceSpec {
    const fix = (p: string) => this.confinePath(p, access);
    switch (spec.kind) {
      case 'idx':
        return { ...spec, files: spec.files.map((f) => ({ ...f, path: fix(f.path) })) };
      case 'raw':
        return { ...spec, files: spec.files.map((f) => ({ ...f, path: fix(f.path) })) };
      case 'npy-fields':
        return { ...spec, files: spec.files.map((f) => ({ ...f, path: fix(f.path) })) };
      case 'npy':
      case 'npz':
      case 'csv':
        return { ...spec, path: fix(spec.path) };
      case 'synthetic-board':
        return spec;
    }
  }

  /** A CSV's columns, from its first line only, so the label can be chosen before the file is read through. */
  async csvHeader(file: string, access: AccessOptions = {}): Promise<CsvHeader> {
    return { ...(await readCsvHeader(this.confinePath(file, access))), path: file };
  }

  /** A source's fields, records and first values; `caller` takes its turn with the other windows'. */
  async inspect(spec: SourceSpec, access: AccessOptions = {}, caller: object = this): Promise<InspectResult> {
    const confined = this.confine(spec, access);
    return this.previews.run(caller, () => this.preview(confined));
  }

  private async preview(spec: SourceSpec): Promise<InspectResult> {
    const source = await openSource(spec);
    const bytes = source.fields.reduce((a, f) => a + recordBytes(f), 0);
    const shown = Math.min(PREVIEW_RECORDS, source.records, Math.max(1, Math.floor(PREVIEW_BYTES / Math.max(1, bytes))));
    const preview: Record<string, number[]>[] = Array.from({ length: shown }, () => ({}));
    const it = source.chunks(shown);
    try {
      const first = await it.next();
      if (!first.done) {
        source.fields.forEach((f, i) => {
          const rb = recordBytes(f);
          for (let r = 0; r < first.value.count; r++) {
            const values = decode(first.value.fields[i].subarray(r * rb, (r + 1) * rb), f.dtype);
            preview[r][f.name] = Array.from({ length: Math.min(PREVIEW_VALUES, recordValues(f)) }, (_, k) => values[k]);
          }
        });
      }
    } finally {
      await it.return(undefined);
    }
    const layout = source.rawLayout();
    return {
      // Texts with the source's path, shown on the page: named inside the workspace, as errors are.
      description: withinWorkspaceRelative(source.description, this.workspace.root),
      records: source.records,
      fields: source.fields,
      preview,
      uncached: { available: layout !== null, reason: layout || !source.uncachedReason ? null : withinWorkspaceRelative(source.uncachedReason, this.workspace.root) },
    };
  }

  async build(request: BuildRequest, access: AccessOptions = {}, onProgress?: (p: BuildProgress) => void): Promise<BuildResult> {
    const jobId = request.jobId ?? newJobId();
    if (this.jobs.has(jobId)) throw new ApiError('E_BAD_INPUT', `a build with job id ${jobId} is already running`);
    const controller = new AbortController();
    this.jobs.set(jobId, controller);
    // The caller's signal (a training run's Cancel) aborts this build as datasets.cancel would.
    const abortFromCaller = () => controller.abort();
    if (access.signal?.aborted) controller.abort();
    access.signal?.addEventListener('abort', abortFromCaller, { once: true });
    try {
      const spec = this.confine(request.source, access);
      const source = await openSource(spec);
      const settings: BuildSettings = { name: request.name, shardBytes: request.shardBytes, fieldMap: request.fieldMap };
      const emit = (p: BuildProgress) => {
        this.events.emit('datasets.progress', p);
        onProgress?.(p);
        access.onProgress?.(p);
      };
      const closeToCancel = () => this.closed.add(jobId);
      const options = { jobId, spec, signal: controller.signal };
      if (request.testSplit) return await this.buildWithTestSplit(source, settings, request.testSplit, { ...options, closeToCancel }, emit);
      const result = await buildCache(this.workspace, source, settings, { ...options, onProgress: emit, closeToCancel });
      // An earlier import of this name with a held-out split left its test part: it holds records this cache trains on.
      await retireDatasets(this.workspace, await heldOutNamesakes(this.workspace, heldOutTestName(request.name)));
      return result;
    } finally {
      this.jobs.delete(jobId);
      this.closed.delete(jobId);
      access.signal?.removeEventListener('abort', abortFromCaller);
    }
  }

  /**
   * An import with a held-out test split: two caches from one source, `<name>` (the training part) and
   * `<name>-test` (the records the seed draws), each naming the other in its manifest. Progress is one bar over
   * both. The training part is published first; a cancel during the test part leaves it without its test set
   * until the same import runs again (the training part is then a cache hit).
   */
  private async buildWithTestSplit(
    source: RecordSource,
    settings: BuildSettings,
    split: TestSplit,
    options: { jobId: string; spec: SourceSpec; signal: AbortSignal; closeToCancel: () => void },
    emit: (p: BuildProgress) => void,
  ): Promise<BuildResult> {
    // Only the last part closes the build to cancels: one during the test part is still honoured (see above).
    const { closeToCancel, ...early } = options;
    const started = Date.now();
    const train = heldOutPart(source, split, 'train');
    const test = heldOutPart(source, split, 'test');
    const testSettings: BuildSettings = { ...settings, name: heldOutTestName(settings.name) };
    // A dataset of that name imported on its own is the user's: never replaced by a split's test part.
    const heldOutIds = new Set(await heldOutNamesakes(this.workspace, testSettings.name));
    const theirs = (await namesakes(this.workspace, testSettings.name)).filter((id) => !heldOutIds.has(id));
    if (theirs.length > 0) {
      throw new ApiError(
        'E_BAD_INPUT',
        `a dataset named ${testSettings.name} (${theirs.join(', ')}) is in the workspace and is not a held-out split: the test split of ${settings.name} would replace it; import under another name, or remove it first ("trainbench cache rm ${theirs[0]}")`,
      );
    }
    const ids = { train: await plannedCacheId(train, settings), test: await plannedCacheId(test, testSettings) };
    const meta = (part: 'train' | 'test'): HeldOutSplit => ({
      part,
      fraction: split.fraction,
      seed: split.seed,
      sourceRecords: source.records,
      other: part === 'train' ? ids.test : ids.train,
    });
    const bytesPerRecord = train.fields.reduce((a, f) => a + recordBytes(f), 0);
    let done = { records: 0, bytes: 0 };
    // One bar: the test part's records and bytes continue where the training part's ended, and 'done' comes once.
    const across = (last: boolean) => (p: BuildProgress) => {
      const perRecord = p.recordsTotal > 0 ? p.bytesTotal / p.recordsTotal : bytesPerRecord;
      const bytesTotal = perRecord * source.records;
      const bytesWritten = done.bytes + p.bytesWritten;
      emit({
        ...p,
        phase: p.phase === 'done' && !last ? 'publishing' : p.phase,
        records: done.records + p.records,
        recordsTotal: source.records,
        bytesWritten,
        bytesTotal,
        etaSeconds: p.phase === 'reading' && p.bytesPerSec > 0 ? (bytesTotal - bytesWritten) / p.bytesPerSec : null,
      });
    };
    const trained = await buildCache(this.workspace, train, settings, { ...early, split: meta('train'), onProgress: across(false) });
    const trainedBytes = trained.dataset.fields.reduce((a, f) => a + f.recordBytes, 0) * trained.dataset.records;
    done = { records: trained.dataset.records, bytes: trainedBytes };
    const tested = await buildCache(this.workspace, test, testSettings, { ...early, closeToCancel, split: meta('test'), onProgress: across(true) });
    return {
      ...trained,
      seconds: (Date.now() - started) / 1000,
      test: { dataset: tested.dataset, hit: tested.hit, dir: tested.dir },
    };
  }

  /** Throws when a build or loader benchmark of this id runs (one started inside another job's work too). */
  refuseTaken(jobId: string): void {
    if (this.jobs.has(jobId)) throw new ApiError('E_BAD_INPUT', `a dataset job with the id ${jobId} is already running: choose another jobId`);
  }

  /** Stops a build or loader benchmark; not taken (false) when none of that id runs, or a build is past its last check. */
  cancel(jobId: string): { cancelled: boolean } {
    const job = this.jobs.get(jobId);
    if (!job || this.closed.has(jobId)) return { cancelled: false };
    job.abort();
    return { cancelled: true };
  }

  list(): Promise<DatasetSummary[]> {
    return listDatasets(this.workspace);
  }

  /** By id or name; a damaged cache is still found, so the report names what is wrong. */
  verify(idOrName: string) {
    return verifyDataset(this.workspace, idOrName);
  }

  /** By id or name. */
  async remove(idOrName: string): Promise<{ removed: string }> {
    return { removed: await removeDataset(this.workspace, idOrName) };
  }

  /**
   * The cached loader at each setting, and the source read in place when it allows it. The
   * source's paths come from the cache's manifest, a workspace file: confined as a request's
   * paths are (anywhere only for the CLI). A cancel (see cancel()) takes effect when the
   * setting in flight ends (the engine measures one for at most maxSeconds): the run is then
   * recorded as cancelled with the settings measured so far, and E_CANCELLED is thrown.
   */
  async benchmark(request: LoaderBenchRequest, access: AccessOptions = {}, onProgress?: (p: LoaderBenchProgress) => void): Promise<LoaderBenchResult> {
    const jobId = request.jobId ?? newJobId();
    if (this.jobs.has(jobId)) throw new ApiError('E_BAD_INPUT', `a job with id ${jobId} is already running`);
    const controller = new AbortController();
    this.jobs.set(jobId, controller);
    try {
      const { dir, manifest } = await resolveDataset(this.workspace, request.dataset);
      // Said with its numbers before the run exists (the engine would refuse it with none).
      const drawn = recordsDrawn(manifest.records, request.sampleRatio);
      if (request.batchSize > drawn) {
        const ratio = request.sampleRatio < 1 ? ` (sample ratio ${request.sampleRatio} of ${manifest.records})` : '';
        throw new ApiError('E_BAD_INPUT', `batch size ${request.batchSize} is larger than the ${drawn} records ${manifest.name} draws per epoch${ratio}: choose a batch of at most ${drawn}`);
      }
      // A device the engine cannot use is refused before the run exists.
      await this.engine.resolveDevice(request.device);
      // A benchmark is a run like any other: runs/<id>/ holds its request, result and telemetry.
      const record = await createRun(this.workspace, 'loader-benchmark', { ...request, jobId });
      const recording = this.telemetry.record(record.stream('telemetry.jsonl', { append: true }));
      const measured: LoaderBenchMeasured = { cached: [], uncached: null, uncachedReason: null };
      try {
        const result = await this.measure(request, dir, manifest, measured, recording, access, {
          signal: controller.signal,
          progress: (p) => {
            const full: LoaderBenchProgress = { jobId, runId: record.id, maxSeconds: request.maxSeconds, ...p };
            this.events.emit('datasets.benchmarkProgress', full);
            onProgress?.(full);
          },
        });
        // Past its last check for a cancel: from here a cancel is answered not taken (the job is no longer listed).
        this.jobs.delete(jobId);
        await record.finish('completed', { result });
        return result;
      } catch (err) {
        const telemetry = await recording.stop().catch(() => mergeTelemetry([]));
        const error = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
        // What was measured before a cancel is kept in the run, beside why it stopped.
        if (error.code === 'E_CANCELLED' && measured.cached.length > 0) {
          // Stopped in the cached pass, the source files were never read: say why their rows are missing.
          const unread = measured.uncached === null && measured.uncachedReason === null;
          const result = loaderResult(request, manifest, unread ? { ...measured, uncachedReason: 'cancelled before the source files were read' } : measured, telemetry);
          await record.finish('cancelled', { result, error: error.toPayload() });
          throw error;
        }
        throw await record.fail(error);
      }
    } finally {
      this.jobs.delete(jobId);
    }
  }

  private async measure(
    request: LoaderBenchRequest,
    dir: string,
    manifest: CacheManifest,
    measured: LoaderBenchMeasured,
    recording: { stop(): Promise<TelemetrySummary> },
    access: AccessOptions,
    o: { signal: AbortSignal; progress: (p: Omit<LoaderBenchProgress, 'jobId' | 'runId' | 'maxSeconds'>) => void },
  ): Promise<LoaderBenchResult> {
    const settings = request.workers.flatMap((workers) => request.prefetch.map((prefetch) => ({ workers, prefetch })));
    // Whether the source files can be read in place is known before anything runs: the bar counts only what will.
    const inPlace = await this.uncachedSource(request, manifest, access);
    if ('reason' in inPlace) measured.uncachedReason = inPlace.reason;
    const total = settings.length * ('reason' in inPlace ? 1 : 2);
    let done = 0;
    const run = async (path: LoaderPath, source: HostSource, rows: LoaderBenchRow[]): Promise<void> => {
      for (const s of settings) {
        if (o.signal.aborted) throw new ApiError('E_CANCELLED', `the loader benchmark was cancelled after ${done} of ${total} settings`);
        o.progress({ phase: 'measuring', path, ...s, done, total, row: null });
        const options = {
          batchSize: request.batchSize,
          workers: s.workers,
          prefetch: s.prefetch,
          sampleRatio: request.sampleRatio,
          seed: 1,
          device: request.device,
          gpuPrefetch: request.gpuPrefetch,
        };
        const r = await this.engine.benchLoader(source, options, 1_000_000, request.maxSeconds);
        const row = { ...s, ...r };
        rows.push(row);
        done += 1;
        o.progress({ phase: 'measured', path, ...s, done, total, row });
      }
    };
    await run('cached', { kind: 'cache', dir }, measured.cached);
    if (!('reason' in inPlace)) {
      measured.uncached = [];
      await run('uncached', inPlace.source, measured.uncached);
    }
    const telemetry = await recording.stop();
    // A cancel taken while the last setting ran (or the telemetry stopped) is honoured too: it was answered "cancelled".
    if (o.signal.aborted) throw new ApiError('E_CANCELLED', `the loader benchmark was cancelled after ${done} of ${total} settings`);
    return loaderResult(request, manifest, measured, telemetry);
  }

  /** The source files read in place (a raw layout of them), or why they cannot be. */
  private async uncachedSource(request: LoaderBenchRequest, manifest: CacheManifest, access: AccessOptions): Promise<{ source: HostSource } | { reason: string }> {
    const skip = (reason: string) => ({ reason: withinWorkspaceRelative(reason, this.workspace.root) });
    if (!request.uncached) return { reason: 'not requested' };
    if (manifest.split) {
      return skip(`${manifest.name} is the ${manifest.split.part === 'test' ? 'held-out test split' : 'training part'} of a split: its records come from all over the source, which the loader cannot read in place`);
    }
    const spec = SourceSpecSchema.safeParse(manifest.source.spec);
    if (!spec.success) return skip('the cache does not record how to read its source');
    let source: RecordSource;
    try {
      source = await openSource(this.confine(spec.data, access));
    } catch (err) {
      const message = (err as Error).message;
      // Refused, not gone: a served window reads only inside the workspace (a UI walk read "can no longer be opened" of a file that was there).
      if (/is outside the workspace/.test(message)) {
        return skip(`its source lies outside the workspace, which a served window may not read (${message}): the CLI and the desktop app can; or upload its files into sources/ and import them`);
      }
      return skip(`the source can no longer be opened: ${message}`);
    }
    const layout = source.rawLayout();
    if (!layout) return skip(source.uncachedReason ?? 'the source cannot be read in place');
    return { source: { kind: 'raw', layout: { records: source.records, fields: layout } } };
  }

  /** The example's dumps, made on first use with progress events (phase 'generating'). */
  private generateExample(records: number, seed: number, access: AccessOptions = {}): Promise<SourceSpec> {
    const started = Date.now();
    const jobId = `example-board-${records}-seed${seed}`;
    return writeBoardDumps(this.workspace, records, seed, {
      signal: access.signal,
      onProgress: (done, bytesWritten, bytesTotal) => {
        const seconds = (Date.now() - started) / 1000;
        const bytesPerSec = seconds > 0 ? bytesWritten / seconds : 0;
        const etaSeconds = bytesPerSec > 0 ? (bytesTotal - bytesWritten) / bytesPerSec : null;
        const progress = { jobId, phase: 'generating' as const, records: done, recordsTotal: records, bytesWritten, bytesTotal, bytesPerSec, etaSeconds };
        this.events.emit('datasets.progress', progress);
        access.onProgress?.(progress);
      },
    });
  }

  /** Builds (or finds) the caches a training data source needs and the input normalisation. */
  async trainingData(data: DataSource, access: AccessOptions): Promise<HostTrainData> {
    let train: { dir: string; manifest: CacheManifest };
    let test: { dir: string; manifest: CacheManifest } | undefined;
    // Sources chosen here (Debian's files, the example dumps) may lie outside the workspace; the caller's may not.
    const ensure = async (name: string, source: SourceSpec, callers = false) => {
      const built = await this.build({ source, name, shardBytes: DEFAULT_SHARD_BYTES, fieldMap: [] }, callers ? access : { ...access, allowPathsOutsideWorkspace: true });
      return resolveDataset(this.workspace, built.dataset.id);
    };
    if (data.kind === 'fashion-mnist') {
      // A caller's folder is confined file by file too: each of the four may itself be a link.
      const callers = data.dir !== undefined;
      const dir = fashionMnistDir(data.dir ? (access.allowPathsOutsideWorkspace ? path.resolve(data.dir) : this.workspace.resolve(data.dir)) : undefined);
      const specs = fashionMnistSpecs(dir);
      // A folder of one's own (MNIST, a test copy) is named after the folder: as "fashion-mnist" it retired the
      // package's 60,000-record cache of that name (re-attack 15).
      const name = callers && path.resolve(dir) !== path.resolve(defaultFashionMnistDir()) ? idxFolderName(dir) : 'fashion-mnist';
      train = await ensure(`${name}-train`, specs.train, callers);
      test = await ensure(`${name}-test`, specs.test, callers);
    } else if (data.kind === 'example-board') {
      // The dumps are the workspace's own files: read with the caller's confinement, like any of its files.
      train = await ensure('example-board-train', await this.generateExample(EXAMPLE_TRAIN_RECORDS, 0, access), true);
      test = await ensure('example-board-test', await this.generateExample(EXAMPLE_TEST_RECORDS, 1, access), true);
    } else if (data.kind === 'idx') {
      const pair = (p: { images: string; labels: string }): SourceSpec => ({
        kind: 'idx',
        files: [
          { path: p.images, field: 'x' },
          { path: p.labels, field: 'y' },
        ],
      });
      const stem = (p: string) => path.basename(p).replace(/\.gz$/, '').replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 48) || 'idx';
      train = await ensure(stem(data.train.images), pair(data.train), true);
      test = data.test ? await ensure(stem(data.test.images), pair(data.test), true) : undefined;
    } else {
      train = await resolveDataset(this.workspace, data.train);
      test = data.test ? await resolveDataset(this.workspace, data.test) : undefined;
      const problem = test ? testSetProblem(train.manifest, test.manifest) : null;
      if (problem) throw new ApiError('E_BAD_INPUT', problem);
    }
    // Inputs are standardised with the training set's statistics (also for the test set).
    const x = train.manifest.fields.find((f) => f.name === 'x');
    const normalize: Record<string, { scale: number; offset: number }> = {};
    if (x?.stats && x.stats.std > 0) normalize.x = { scale: 1 / x.stats.std, offset: -x.stats.mean / x.stats.std };
    const describe = (m: CacheManifest) => `${m.name} (${m.records} records)`;
    return {
      train: { dir: train.dir },
      test: test ? { dir: test.dir } : undefined,
      normalize,
      description: test ? `${describe(train.manifest)}, test ${describe(test.manifest)}` : describe(train.manifest),
    };
  }
}

/** The rows a loader benchmark has measured so far (kept when it is cancelled). */
interface LoaderBenchMeasured {
  cached: LoaderBenchRow[];
  uncached: LoaderBenchRow[] | null;
  uncachedReason: string | null;
}

function loaderResult(request: LoaderBenchRequest, manifest: CacheManifest, m: LoaderBenchMeasured, telemetry: TelemetrySummary): LoaderBenchResult {
  const best = m.cached.reduce((a, b) => (b.samplesPerSec > a.samplesPerSec ? b : a));
  return {
    dataset: manifest.id,
    batchSize: request.batchSize,
    cached: m.cached,
    uncached: m.uncached,
    uncachedReason: m.uncachedReason,
    best: { workers: best.workers, prefetch: best.prefetch },
    telemetry,
  };
}
