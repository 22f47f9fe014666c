import { ApiError } from '../api/errors';
import { EngineClient } from '../engine/engine-client';
import type { SupervisorOptions } from '../engine/supervisor';
import type { ApiRouter } from './api-router';
import { createApiRouter } from './api-router';
import { BatchSizeService } from './batch-size/batch-size-service';
import { TrainingBenchmarkService } from './benchmarks/training-benchmark';
import { DatasetService } from './datasets/dataset-service';
import { EventHub } from './event-hub';
import { listFiles } from './files';
import { listModels, readModelSpec } from './model-files';
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
  dispose(): Promise<void>;
}

export async function createServices(options: ServicesOptions): Promise<Services> {
  const workspace = await openWorkspace(options.workspaceDir);
  const engine = new EngineClient(options.engine);
  const events = new EventHub();
  const unsubscribe = engine.onStatus((status) => events.emit('engine.status', status));
  const telemetry = new TelemetryService(events, { enginePid: () => engine.status().pid });
  const datasets = new DatasetService(workspace, engine, events, telemetry);
  const training = new TrainingService(engine, events, workspace, datasets, telemetry);
  const batchSize = new BatchSizeService(engine, events, workspace, datasets);
  const benchmarks = new TrainingBenchmarkService(engine, events, workspace, datasets, telemetry);
  const optimise = new OptimiseService(engine, events, workspace, benchmarks, batchSize);
  const reports = new ReportService(workspace, { chooseFolder: options.chooseFolder });
  const scriptJobs = new ScriptJobs();
  const scripts = new ScriptBenchmarkService(events, workspace, telemetry, scriptJobs);
  const scriptRuns = new ScriptRunService(events, workspace, telemetry, scriptJobs);

  const router = createApiRouter({
    'engine.version': () => engine.version(),
    'engine.devices': () => engine.devices(),
    'engine.ping': () => engine.ping(),
    'engine.status': () => Promise.resolve(engine.status()),
    'model.info': ({ spec }) => engine.modelInfo(spec),
    'train.run': (request) => training.run(request),
    'train.cancel': ({ runId }) => training.cancel(runId),
    'batchSize.search': (request) => batchSize.search(request),
    'batchSize.cancel': ({ searchId }) => batchSize.cancel(searchId),
    'runs.list': () => listRuns(workspace),
    'runs.get': ({ id }) => readRunDetail(workspace, id),
    'datasets.list': () => datasets.list(),
    'datasets.inspect': ({ source }) => datasets.inspect(source),
    'datasets.build': (request) => datasets.build(request),
    'datasets.cancel': ({ jobId }) => Promise.resolve(datasets.cancel(jobId)),
    'datasets.verify': ({ id }) => datasets.verify(id),
    'datasets.remove': ({ id }) => datasets.remove(id),
    'datasets.benchmark': (request) => datasets.benchmark(request),
    'benchmark.training': (request) => benchmarks.run(request),
    'benchmark.cancel': ({ jobId }) => benchmarks.cancel(jobId),
    'script.benchmark': (request) => (refuseScripts(options), scripts.run(request)),
    'script.cancel': ({ jobId }) => Promise.resolve(scriptJobs.cancel(jobId)),
    'script.optimise': (request) => (refuseScripts(options), optimiseScript(workspace, events, request, { jobs: scriptJobs })),
    'optimise.start': (request) => optimise.start(request),
    'optimise.cancel': ({ optimiseId }) => optimise.cancel(optimiseId),
    'optimise.resume': ({ optimiseId }) => optimise.resume(optimiseId),
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
    'models.list': () => listModels(workspace),
    'models.readSpec': ({ path }) => readModelSpec(workspace, path),
    'script.train': (request) => (refuseScripts(options), scriptRuns.run(request)),
    'script.findBatchSize': (request) => (refuseScripts(options), searchScriptBatch(workspace, request, { jobs: scriptJobs, events })),
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
    async dispose() {
      scriptJobs.cancelAll();
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
      'this workbench does not start commands from requests: script targets run in the desktop app, from the CLI (trainbench benchmark-script -- ...), or in serve mode started with --allow-scripts',
    );
  }
}
