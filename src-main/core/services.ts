import { randomBytes } from 'node:crypto';

import { ApiError } from '../api/errors';
import { jobIdAt } from '../api/ids';
import { isScriptRequest } from '../api/target';
import { EngineClient } from '../engine/engine-client';
import type { SupervisorOptions } from '../engine/supervisor';
import type { ApiRouter } from './api-router';
import { createApiRouter } from './api-router';
import { appInfo } from './app-info';
import { BatchSizeService } from './batch-size/batch-size-service';
import { TrainingBenchmarkService } from './benchmarks/training-benchmark';
import { CheckService } from './check/check-service';
import { DatasetService } from './datasets/dataset-service';
import type { DownloadLimits } from './downloads/download-plan';
import { DownloadService } from './downloads/download-service';
import { EventHub } from './event-hub';
import { listFiles } from './files';
import { JobRegistry } from './jobs/job-registry';
import { listModels, readModelSpec, saveModelSpec } from './model-files';
import { RunAnnotator } from './run-notes';
import { listRuns, readRunDetail } from './run-reader';
import { OptimiseService } from './optimise/optimise-service';
import type { ChooseFolder } from './reports/report-service';
import { ReportService } from './reports/report-service';
import { TelemetryService } from './telemetry/telemetry-service';
import { TrainingService } from './training-service';
import type { Workspace } from './workspace';
import { ScriptBenchmarkService } from './script/script-benchmark';
import { ScriptJobs } from './script/script-jobs';
import { optimiseScript } from './script/script-optimise';
import { ScriptRunService } from './script/script-run';
import { searchScriptBatch } from './script/script-batch-size';
import { readScriptWizardState } from './script/script-optimise-resume';
import { openWorkspace } from './workspace';

export interface ServicesOptions {
  workspaceDir: string;
  engine?: SupervisorOptions;
  /** The desktop shell's folder dialog, for reports.exportToChosenFolder; absent in serve mode and the CLI. */
  chooseFolder?: ChooseFolder;
  /**
   * Whether requests through the router may start the user's own commands
   * (script.*): code execution, so the desktop app allows it and serve mode only
   * when started with --allow-scripts. The CLI calls the services directly.
   */
  allowScripts?: boolean;
  /** Serve mode: downloads.prepare hands out tickets its server streams zips for (limits: tests make them small). */
  downloads?: { offered: boolean; limits?: Partial<DownloadLimits> };
  /**
   * Keep sampling telemetry slowly while no window watches, so the Dashboard's history covers the time it
   * was not shown (ADR 0033). The app and serve do; the CLI's headless commands do not.
   */
  keepTelemetryHistory?: boolean;
}

/** Everything the shells (Electron, serve, CLI) share: one engine, one workspace, one router. */
export interface Services {
  workspace: Workspace;
  engine: EngineClient;
  router: ApiRouter;
  events: EventHub;
  training: TrainingService;
  datasets: DatasetService;
  telemetry: TelemetryService;
  batchSize: BatchSizeService;
  benchmarks: TrainingBenchmarkService;
  optimise: OptimiseService;
  reports: ReportService;
  scripts: ScriptBenchmarkService;
  /** Every running script job (benchmark, batch search, wizard): script.cancel and dispose reach them all. */
  scriptJobs: ScriptJobs;
  /** Whole training runs of the user's command (script.train). */
  scriptRuns: ScriptRunService;
  /** Every job started through the router: jobs.list, jobs.cancel, jobs.started/ended. */
  jobs: JobRegistry;
  /** The regression gate: a saved benchmark measured again and compared (trainbench check). */
  check: CheckService;
  /** Zips of reports and runs for serve mode's downloads. */
  downloads: DownloadService;
  dispose(): Promise<void>;
}

export async function createServices(options: ServicesOptions): Promise<Services> {
  const workspace = await openWorkspace(options.workspaceDir);
  const engine = new EngineClient(options.engine);
  const events = new EventHub();
  const unsubscribe = engine.onStatus((status) => events.emit('engine.status', status));
  const telemetry = new TelemetryService(events, { enginePid: () => engine.status().pid });
  if (options.keepTelemetryHistory === true) telemetry.keepHistory();
  const datasets = new DatasetService(workspace, engine, events, telemetry);
  const training = new TrainingService(engine, events, workspace, datasets, telemetry);
  const batchSize = new BatchSizeService(engine, events, workspace, datasets);
  const benchmarks = new TrainingBenchmarkService(engine, events, workspace, datasets, telemetry);
  const optimise = new OptimiseService(engine, events, workspace, benchmarks, batchSize);
  const reports = new ReportService(workspace, { chooseFolder: options.chooseFolder });
  const scriptJobs = new ScriptJobs();
  const scripts = new ScriptBenchmarkService(events, workspace, telemetry, scriptJobs);
  const check = new CheckService(workspace, benchmarks, scripts);
  const scriptRuns = new ScriptRunService(events, workspace, telemetry, scriptJobs);
  const jobs = new JobRegistry(events, () => jobIdAt(new Date(), randomBytes(3).toString('hex')));
  const cancelScript = (jobId: string) => scriptJobs.cancel(jobId);
  // A job started through the router is stopped by its registered cancel; one started in-process (the CLI,
  // a wizard's own benchmark) by whichever service holds that id.
  const serviceCancels = [
    (id: string) => training.cancel(id),
    (id: string) => batchSize.cancel(id),
    (id: string) => benchmarks.cancel(id),
    (id: string) => optimise.cancel(id),
    (id: string) => datasets.cancel(id),
    cancelScript,
  ];
  const cancelJob = async (jobId: string): Promise<{ cancelled: boolean }> => {
    if ((await jobs.cancel(jobId)).cancelled) return { cancelled: true };
    for (const cancel of serviceCancels) if ((await cancel(jobId)).cancelled) return { cancelled: true };
    return { cancelled: false };
  };

  const annotator = new RunAnnotator(workspace);
  const downloads = new DownloadService(workspace, { offered: options.downloads?.offered === true, limits: options.downloads?.limits });
  const router = createApiRouter({
    'engine.version': () => engine.version(),
    'engine.devices': () => engine.devices(),
    'engine.ping': () => engine.ping(),
    'engine.status': () => Promise.resolve(engine.status()),
    'app.info': () => Promise.resolve(appInfo(workspace.root)),
    'model.info': ({ spec }) => engine.modelInfo(spec),
    'jobs.list': () => Promise.resolve(jobs.list()),
    'jobs.cancel': ({ jobId }) => cancelJob(jobId),
    // The methods that measure either target answer a script's request as its script.* alias does.
    'train.run': (request) =>
      isScriptRequest(request)
        ? (refuseScripts(options), jobs.run('train.run', request, cancelScript, (r) => scriptRuns.run(r)))
        : jobs.run('train.run', request, (id) => training.cancel(id), (r) => training.run(r)),
    'train.cancel': ({ runId }) => cancelJob(runId),
    'batchSize.search': (request) =>
      isScriptRequest(request)
        ? (refuseScripts(options),
          jobs.run('batchSize.search', request, cancelScript, ({ searchId, ...r }) => searchScriptBatch(workspace, { ...r, jobId: searchId }, { jobs: scriptJobs, events })))
        : jobs.run('batchSize.search', request, (id) => batchSize.cancel(id), (r) => batchSize.search(r)),
    'batchSize.cancel': ({ searchId }) => cancelJob(searchId),
    'runs.list': () => listRuns(workspace),
    'runs.get': ({ id }) => readRunDetail(workspace, id),
    'runs.annotate': (params) => annotator.annotate(params),
    'downloads.prepare': ({ kind, id }) => downloads.prepare(kind, id),
    'datasets.list': () => datasets.list(),
    'datasets.csvHeader': ({ path }) => datasets.csvHeader(path),
    'datasets.inspect': ({ source }) => datasets.inspect(source),
    'datasets.build': (request) => jobs.run('datasets.build', request, (id) => datasets.cancel(id), (r) => datasets.build(r)),
    'datasets.cancel': ({ jobId }) => cancelJob(jobId),
    'datasets.verify': ({ id }) => datasets.verify(id),
    'datasets.remove': ({ id }) => datasets.remove(id),
    'datasets.benchmark': (request) => jobs.run('datasets.benchmark', request, (id) => datasets.cancel(id), (r) => datasets.benchmark(r)),
    'benchmark.training': (request) =>
      isScriptRequest(request)
        ? (refuseScripts(options), jobs.run('benchmark.training', request, cancelScript, (r) => scripts.run(r)))
        : jobs.run('benchmark.training', request, (id) => benchmarks.cancel(id), (r) => benchmarks.run(r)),
    'benchmark.cancel': ({ jobId }) => cancelJob(jobId),
    'script.benchmark': (request) => (refuseScripts(options), jobs.run('script.benchmark', request, cancelScript, (r) => scripts.run(r))),
    'script.cancel': ({ jobId }) => cancelJob(jobId),
    'script.optimise': (request) => (
      refuseScripts(options), jobs.run('script.optimise', request, cancelScript, (r) => optimiseScript(workspace, events, r, { jobs: scriptJobs, telemetry }))
    ),
    'optimise.start': (request) =>
      isScriptRequest(request)
        ? (refuseScripts(options),
          jobs.run('optimise.start', request, cancelScript, ({ optimiseId, ...r }) => optimiseScript(workspace, events, { ...r, jobId: optimiseId }, { jobs: scriptJobs, telemetry })))
        : jobs.run('optimise.start', request, (id) => optimise.cancel(id), (r) => optimise.start(r)),
    'optimise.cancel': ({ optimiseId }) => cancelJob(optimiseId),
    'optimise.resume': (request) => jobs.run('optimise.resume', request, (id) => optimise.cancel(id), ({ optimiseId }) => optimise.resume(optimiseId)),
    'optimise.state': ({ optimiseId }) => optimise.state(optimiseId),
    'files.list': ({ dir }) => listFiles(workspace, dir),
    'telemetry.subscribe': ({ intervalMs, historySeconds, leaseId }) => Promise.resolve(telemetry.subscribe(intervalMs, historySeconds, leaseId)),
    'telemetry.unsubscribe': ({ leaseId }) => Promise.resolve((telemetry.unsubscribe(leaseId), {})),
    'reports.list': () => reports.list(),
    'reports.get': ({ id }) => reports.get(id),
    'reports.figure': ({ id, name }) => reports.figure(id, name),
    'reports.generate': (request) => reports.generate(request),
    'reports.save': ({ id, markdown }) => reports.save(id, markdown),
    'reports.regenerate': ({ id }) => reports.regenerate(id),
    'reports.export': ({ id, dir }) => reports.export(id, dir),
    'reports.exportToChosenFolder': ({ id }) => reports.exportToChosenFolder(id),
    'reports.remove': ({ id }) => reports.remove(id),
    'runs.trace': ({ id }) => reports.trace(id),
    // Reads two saved runs; measures nothing, so serve mode answers it as it does runs.get.
    'runs.compareSpeed': ({ ids, tolerance }) => check.compare(ids, tolerance),
    'models.list': () => listModels(workspace),
    'models.readSpec': ({ path }) => readModelSpec(workspace, path),
    'models.save': (params) => saveModelSpec(workspace, params),
    'script.train': (request) => (refuseScripts(options), jobs.run('script.train', request, cancelScript, (r) => scriptRuns.run(r))),
    'script.findBatchSize': (request) => (
      refuseScripts(options), jobs.run('script.findBatchSize', request, cancelScript, (r) => searchScriptBatch(workspace, r, { jobs: scriptJobs, events }))
    ),
    // Reads what a run measured; starts nothing, so serve mode answers it without --allow-scripts.
    'script.optimiseState': ({ runId }) => readScriptWizardState(workspace, runId),
  });

  return {
    workspace,
    engine,
    router,
    events,
    training,
    datasets,
    telemetry,
    batchSize,
    benchmarks,
    optimise,
    reports,
    scripts,
    scriptJobs,
    scriptRuns,
    jobs,
    check,
    downloads,
    async dispose() {
      scriptJobs.cancelAll();
      jobs.dispose();
      unsubscribe();
      await telemetry.dispose();
      await engine.stop();
    },
  };
}

/** Throws unless this shell lets requests start the user's commands (see ServicesOptions.allowScripts). */
function refuseScripts(options: ServicesOptions): void {
  if (options.allowScripts !== true) {
    throw new ApiError(
      'E_FORBIDDEN',
      'this workbench does not start commands from requests: script targets run in the desktop app, from the CLI (trainbench benchmark-training -- python3 train.py), or in serve mode started with --allow-scripts',
    );
  }
}
