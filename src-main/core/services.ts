import { isIP } from 'node:net';

import { ApiError } from '../api/errors';
import { newJobId } from '../api/ids';
import { EngineClient } from '../engine/engine-client';
import type { SupervisorOptions } from '../engine/supervisor';
import type { ApiRouter } from './api-router';
import { createApiRouter } from './api-router';
import { BatchSizeService } from './batch-size/batch-size-service';
import { BenchmarkService } from './benchmarks/benchmark-service';
import { CheckService } from './check/check-service';
import { appInfo } from './common/app-info';
import { EventHub } from './common/event-hub';
import { DatasetService } from './datasets/dataset-service';
import type { DownloadLimits } from './downloads/download-plan';
import { DownloadService } from './downloads/download-service';
import { JobRegistry } from './jobs/job-registry';
import { RunningJobs } from './jobs/running-jobs';
import { OptimiseService } from './optimise/optimise-service';
import type { ChooseFolder } from './reports/report-service';
import { ReportService } from './reports/report-service';
import { EngineRunner } from './targets/engine-runner';
import type { Runners } from './targets/runner-for';
import { runnerFor } from './targets/runner-for';
import { ScriptRunner } from './targets/script-runner';
import { TelemetryService } from './telemetry/telemetry-service';
import { TrainingService } from './training/training-service';
import { listFiles } from './workspace/files';
import { listModels, readModelSpec, saveModelSpec } from './workspace/model-files';
import { RunAnnotator } from './workspace/run-notes';
import { listRuns, readRunDetail } from './workspace/run-reader';
import type { Workspace } from './workspace/workspace';
import { openWorkspace } from './workspace/workspace';

export interface ServicesOptions {
  workspaceDir: string;
  engine?: SupervisorOptions;
  /** The desktop shell's folder dialog, for reports.exportToChosenFolder; absent in serve mode and the CLI. */
  chooseFolder?: ChooseFolder;
  /**
   * Whether requests through the router may start the user's own commands
   * (a script target): code execution, so the desktop app allows it and serve mode only
   * when started with --allow-scripts. The CLI calls the services directly.
   */
  allowScripts?: boolean;
  /**
   * A job across machines (issue 40): the one address other than loopback a request may have the probes' collector
   * and the follow hub listen on (serve's --collector-host). Any page can send serve requests: without it, a request
   * cannot open a listener other machines reach. The CLI calls the services directly and takes any address.
   */
  collectorHost?: string;
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
  datasets: DatasetService;
  telemetry: TelemetryService;
  /** One service per capability, each over the runner of its request's target (runnerFor). */
  training: TrainingService;
  benchmarks: BenchmarkService;
  batchSize: BatchSizeService;
  optimise: OptimiseService;
  reports: ReportService;
  /** Every job started through the router: jobs.list, jobs.started/ended. */
  jobs: JobRegistry;
  /** Every running job of this process, however started (the router, the CLI, a wizard's own search): what cancels reach. */
  running: RunningJobs;
  /** Stops any job of this process by its id (jobs.cancel; the CLI's Ctrl-C). */
  cancelJob(jobId: string): Promise<{ cancelled: boolean }>;
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
  const running = new RunningJobs();
  const datasets = new DatasetService(workspace, engine, events, telemetry);
  // One id, one job: the registry also refuses an id a job started in-process holds, a dataset build inside
  // a training run's preparation included (its id is announced in datasets.progress, so a client can name it).
  const jobs = new JobRegistry(events, () => newJobId(), () => new Date(), (id) => {
    running.refuseTaken(id);
    datasets.refuseTaken(id);
  }, workspace.root);
  // A job started through the router is stopped by its registered cancel; one started in-process (the CLI,
  // a wizard's own search) through the running jobs; a dataset build or loader benchmark by the datasets.
  const cancelJob = async (jobId: string): Promise<{ cancelled: boolean }> => {
    if ((await jobs.cancel(jobId)).cancelled) return { cancelled: true };
    if ((await running.cancel(jobId)).cancelled) return { cancelled: true };
    return datasets.cancel(jobId);
  };
  // The runners are made before the capabilities, which the engine's wizard reaches through these two functions.
  let batchSize: BatchSizeService | null = null;
  const runners: Runners = {
    engine: new EngineRunner({
      engine,
      events,
      workspace,
      datasets,
      telemetry,
      searchBatch: (request, o) => batchSize!.search({ ...request } as never, o),
      cancelJob: (id) => running.cancel(id),
    }),
    script: new ScriptRunner({ events, workspace, telemetry, jobs: running }),
  };
  const training = new TrainingService(runners, running);
  const benchmarks = new BenchmarkService(runners, running, events, workspace);
  batchSize = new BatchSizeService(runners, running, workspace);
  const optimise = new OptimiseService(runners, running);
  const reports = new ReportService(workspace, { chooseFolder: options.chooseFolder });
  const check = new CheckService(workspace, benchmarks, (request) => runnerFor(request, runners).kind === 'script');
  const search = batchSize;
  const guarded = <T extends object>(request: T): T => {
    if (runnerFor(request, runners).kind === 'script') {
      refuseScripts(options);
      refuseCollector(options, request);
    }
    return request;
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
    'train.run': (request) => jobs.run('train.run', guarded(request), (id) => running.cancel(id), (r) => training.run(r)),
    'batchSize.search': (request) => jobs.run('batchSize.search', guarded(request), (id) => running.cancel(id), (r) => search.search(r)),
    'benchmark.training': (request) => jobs.run('benchmark.training', guarded(request), (id) => running.cancel(id), (r) => benchmarks.run(r)),
    'optimise.start': (request) => jobs.run('optimise.start', guarded(request), (id) => running.cancel(id), (r) => optimise.start(r)),
    'optimise.resume': (request) => jobs.run('optimise.resume', request, (id) => running.cancel(id), ({ jobId }) => optimise.resume(jobId) as never),
    'optimise.state': ({ jobId }) => optimise.state(jobId),
    'runs.list': () => listRuns(workspace),
    'runs.get': ({ id }) => readRunDetail(workspace, id),
    'runs.annotate': (params) => annotator.annotate(params),
    'downloads.prepare': ({ kind, id }) => downloads.prepare(kind, id),
    'datasets.list': () => datasets.list(),
    'datasets.csvHeader': ({ path }) => datasets.csvHeader(path),
    'datasets.inspect': ({ source }, caller) => datasets.inspect(source, {}, caller),
    'datasets.build': (request) => jobs.run('datasets.build', request, (id) => datasets.cancel(id), (r) => datasets.build(r)),
    'datasets.verify': ({ id }) => datasets.verify(id),
    'datasets.remove': ({ id }) => datasets.remove(id),
    'datasets.benchmark': (request) => jobs.run('datasets.benchmark', request, (id) => datasets.cancel(id), (r) => datasets.benchmark(r)),
    'files.list': ({ dir }) => listFiles(workspace, dir),
    'telemetry.subscribe': ({ intervalMs, historySeconds, leaseId }) => Promise.resolve(telemetry.subscribe(intervalMs, historySeconds, leaseId)),
    'telemetry.unsubscribe': ({ leaseId }) => Promise.resolve((telemetry.unsubscribe(leaseId), {})),
    'reports.list': () => reports.list(),
    'reports.get': ({ id }) => reports.get(id),
    'reports.figure': ({ id, name }) => reports.figure(id, name),
    'reports.generate': (request, caller) => reports.generate(request, caller),
    'reports.save': ({ id, markdown }, caller) => reports.save(id, markdown, caller),
    'reports.regenerate': ({ id }, caller) => reports.regenerate(id, caller),
    'reports.export': ({ id, dir }, caller) => reports.export(id, dir, caller),
    'reports.exportToChosenFolder': ({ id }) => reports.exportToChosenFolder(id),
    'reports.remove': ({ id }, caller) => reports.remove(id, caller),
    'runs.trace': ({ id }) => reports.trace(id),
    // Reads two saved runs; measures nothing, so serve mode answers it as it does runs.get.
    'runs.compareSpeed': ({ ids, tolerance }) => check.compare(ids, tolerance),
    'models.list': () => listModels(workspace),
    'models.readSpec': ({ path }) => readModelSpec(workspace, path),
    'models.save': (params) => saveModelSpec(workspace, params),
  });

  return {
    workspace,
    engine,
    router,
    events,
    training,
    datasets,
    telemetry,
    batchSize: search,
    benchmarks,
    optimise,
    reports,
    jobs,
    running,
    cancelJob,
    check,
    downloads,
    async dispose() {
      running.cancelAll();
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

/** Throws unless a request's collector listens on loopback, or on the one address the shell was started with. */
function refuseCollector(options: ServicesOptions, request: object): void {
  const c = (request as { collector?: { host?: unknown } }).collector;
  if (!c || typeof c.host !== 'string') return;
  const host = c.host.toLowerCase();
  // A loopback address written as one (127.0.0.256 matches the pattern but is a host name for the resolver to answer).
  const loopback = host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
  if (loopback || host === options.collectorHost?.toLowerCase()) return;
  const allowed = options.collectorHost ? `loopback or ${options.collectorHost}` : 'loopback';
  throw new ApiError(
    'E_FORBIDDEN',
    `this workbench lets a request listen for other machines' ranks only on ${allowed}, not on ${JSON.stringify(c.host.slice(0, 64))}: serve mode is started with --collector-host ADDRESS for a job across machines (the CLI's --collector needs none)`,
  );
}
