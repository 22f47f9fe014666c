import { z } from 'zod';

import { BatchSearchRequestSchema, BatchSearchResultSchema } from './batch-size';
import { TrainingBenchmarkRequestSchema } from './benchmark';
import { BenchmarkResultSchema } from './benchmark-result';
import { CheckResultSchema, CompareSpeedParamsSchema } from './check';
import { DownloadRequestSchema, DownloadTicketSchema } from './downloads';
import { IdSchema } from './ids';
import { RunAnnotateParamsSchema, RunAnnotationSchema } from './run-notes';
import type { JobMethod } from './jobs';
import { JOB_METHODS, JobCancelParamsSchema, JobCancelResultSchema, JobInfoSchema } from './jobs';
import {
  FigureNameSchema,
  ReportDetailSchema,
  ReportExportChosenResultSchema,
  ReportExportRequestSchema,
  ReportExportResultSchema,
  ReportGenerateRequestSchema,
  ReportIdSchema,
  ReportSaveRequestSchema,
  ReportSummarySchema,
  RunTraceResultSchema,
} from './reports';
import { AppInfoSchema } from './app-info';
import { DevicesSchema, EngineVersionSchema, PingResultSchema } from './devices';
import { EngineStatusEventSchema } from './events';
import { ModelInfoSchema, ModelSpecSchema } from './model-spec';
import { ModelEntrySchema, ReadSpecRequestSchema, ReadSpecResultSchema } from './model-files';
import { SaveSpecRequestSchema, SaveSpecResultSchema } from './model-sizing';
import { TelemetrySnapshotSchema, TelemetrySubscribeSchema } from './telemetry';
import { RunDetailSchema, RunSummarySchema, TrainRequestSchema } from './training';
import { TrainRunResultSchema, type EngineTrainRun, type ScriptTrainRun } from './train-result';
import {
  BuildRequestSchema,
  BuildResultSchema,
  CsvHeaderSchema,
  DatasetSummarySchema,
  FileEntrySchema,
  InspectResultSchema,
  LoaderBenchRequestSchema,
  LoaderBenchResultSchema,
  SourceSpecSchema,
  VerifyResultSchema,
} from './datasets';
import { OptimiseIdParamsSchema, OptimiseRequestSchema, WizardStateSchema } from './optimise';
import { OptimiseRecordSchema, OptimiseResultSchema } from './optimise-result';
import type { EngineOptimiseResult, ScriptOptimiseResult } from './optimise-result';
import { ScriptBenchmarkRequestSchema, ScriptOptimiseRequestSchema, ScriptTrainRequestSchema } from './script-target';
import { ScriptBatchSearchRequestSchema } from './script-target';
import { eitherTarget } from './target';
import type { EngineBenchmarkResult, ScriptBenchmarkResult } from './benchmark-result';

const NoParams = z.object({}).strict();

/**
 * Every request of the contract: its params schema (validated by the receiver)
 * and its result schema (validated by the caller).
 */
export const apiMethods = {
  'engine.version': { params: NoParams, result: EngineVersionSchema },
  'engine.devices': { params: NoParams, result: DevicesSchema },
  'engine.ping': { params: NoParams, result: PingResultSchema },
  'engine.status': { params: NoParams, result: EngineStatusEventSchema },
  /** The workbench's build, runtime and workspace folder, for the About panel. */
  'app.info': { params: NoParams, result: AppInfoSchema },
  'model.info': { params: z.object({ spec: ModelSpecSchema }).strict(), result: ModelInfoSchema },
  /** Every running job (training, benchmark, batch-size search, wizard, dataset build) with its events so far. */
  'jobs.list': { params: NoParams, result: z.array(JobInfoSchema) },
  /**
   * Stops any job by its id: a run at its next step, a script's process group at once, a wizard at once (the trial
   * in flight is dropped; its state stays saved for optimise.resume), a dataset build or loader benchmark at its next check.
   */
  'jobs.cancel': { params: JobCancelParamsSchema, result: JobCancelResultSchema },
  /**
   * Trains to completion, either target: the engine's progress arrives as train.progress events, a script's as
   * script.progress with its output as script.output, all with the request's jobId (which names the run too).
   */
  'train.run': { params: eitherTarget(TrainRequestSchema, ScriptTrainRequestSchema), result: TrainRunResultSchema },
  /**
   * Searches the batch size that fits with headroom and trains fastest, either target (a script's dataloader.batch_size
   * varied, an OOM a data point): its trials arrive as batchSize.trial events; one result shape for both.
   */
  'batchSize.search': { params: eitherTarget(BatchSearchRequestSchema, ScriptBatchSearchRequestSchema), result: BatchSearchResultSchema },
  'runs.list': { params: NoParams, result: z.array(RunSummarySchema) },
  'runs.get': { params: z.object({ id: IdSchema }).strict(), result: RunDetailSchema },
  /** Stores a run's name, tags and notes (runs/<id>/notes.json; run.json is left as the run wrote it). */
  'runs.annotate': { params: RunAnnotateParamsSchema, result: RunAnnotationSchema },
  /**
   * Serve mode: plans a zip of a report (markdown + figures) or a run's folder and returns a one-time
   * ticket URL the browser downloads it from; refusals (an oversize file) name the file. Refused elsewhere.
   */
  'downloads.prepare': { params: DownloadRequestSchema, result: DownloadTicketSchema },
  'datasets.list': { params: NoParams, result: z.array(DatasetSummarySchema) },
  /** Detected fields, record count and a preview of a source, before building. */
  'datasets.inspect': { params: z.object({ source: SourceSpecSchema }).strict(), result: InspectResultSchema },
  /** The columns of a CSV's header row (the first line only, bounded), so its label column can be chosen from them. */
  'datasets.csvHeader': { params: z.object({ path: z.string().min(1).max(4096) }).strict(), result: CsvHeaderSchema },
  /** Builds a cache; progress arrives as datasets.progress events with the request's jobId. */
  'datasets.build': { params: BuildRequestSchema, result: BuildResultSchema },
  'datasets.verify': { params: z.object({ id: IdSchema }).strict(), result: VerifyResultSchema },
  'datasets.remove': { params: z.object({ id: IdSchema }).strict(), result: z.object({ removed: z.string() }) },
  /**
   * The loader on the cache (and on the source in place) at each setting; each setting's start and end arrive as
   * datasets.benchmarkProgress events with the request's jobId. Cancelled (jobs.cancel), it stops when the setting
   * in flight ends and answers E_CANCELLED; its run keeps the settings measured.
   */
  'datasets.benchmark': { params: LoaderBenchRequestSchema, result: LoaderBenchResultSchema },
  /**
   * Starts (or renews, with leaseId) a telemetry lease and returns recent history; samples then arrive
   * as telemetry.sample events. A lease not renewed for 15 s lapses, and sampling stops when none is left.
   */
  'telemetry.subscribe': {
    params: TelemetrySubscribeSchema.extend({ leaseId: IdSchema.optional() }),
    result: TelemetrySnapshotSchema.extend({ leaseId: z.string() }),
  },
  'telemetry.unsubscribe': { params: z.object({ leaseId: IdSchema }).strict(), result: z.object({}) },
  /**
   * Runs the training benchmark to completion, either target; progress arrives as benchmark.progress events with the
   * request's jobId, and a script's output as script.output.
   */
  'benchmark.training': { params: eitherTarget(TrainingBenchmarkRequestSchema, ScriptBenchmarkRequestSchema), result: BenchmarkResultSchema },
  /** Runs the optimisation wizard to completion (or cancellation), either target; progress arrives as optimise.progress events with the request's jobId. */
  'optimise.start': { params: eitherTarget(OptimiseRequestSchema, ScriptOptimiseRequestSchema), result: OptimiseResultSchema },
  /** Continues a cancelled or interrupted engine wizard from its saved state (a script's: optimise.start with resumeFrom). */
  'optimise.resume': { params: OptimiseIdParamsSchema, result: OptimiseResultSchema },
  /**
   * What a wizard has measured so far, by its job id, either target: an engine wizard's saved state (live, cancelled,
   * interrupted or finished), or a script wizard's (its job id names its run) result once completed, else its state
   * saved after the baseline and each trial; null before a script wizard's baseline.
   */
  'optimise.state': { params: OptimiseIdParamsSchema, result: z.union([WizardStateSchema, OptimiseRecordSchema.nullable()]) },
  /** Files in a folder of the workspace, for choosing a source to import. */
  'files.list': { params: z.object({ dir: z.string().max(4096).default('') }).strict(), result: z.object({ dir: z.string(), entries: z.array(FileEntrySchema), omitted: z.number().int().nonnegative(), omittedAtLeast: z.boolean() }) },
  /** ADR reports (issue 13): reports/NNNN-title/ folders of markdown + SVG figures. */
  'reports.list': { params: NoParams, result: z.array(ReportSummarySchema) },
  'reports.get': { params: z.object({ id: ReportIdSchema }).strict(), result: ReportDetailSchema },
  /** One figure's SVG text, by the file name the markdown links. */
  'reports.figure': { params: z.object({ id: ReportIdSchema, name: FigureNameSchema }).strict(), result: z.object({ name: z.string(), svg: z.string() }) },
  'reports.generate': { params: ReportGenerateRequestSchema, result: ReportDetailSchema },
  /** Stores the edited markdown as is. */
  'reports.save': { params: ReportSaveRequestSchema, result: ReportDetailSchema },
  /** Redraws the generated blocks (<!-- tb:begin id --> ... <!-- tb:end id -->) from the runs; text outside them is kept. */
  'reports.regenerate': { params: z.object({ id: ReportIdSchema }).strict(), result: ReportDetailSchema },
  /** Copies the markdown and figures into a folder of the workspace. */
  'reports.export': { params: ReportExportRequestSchema, result: ReportExportResultSchema },
  /** Desktop only: copies into a folder the person chooses in a dialog; refused in serve mode. */
  'reports.exportToChosenFolder': { params: z.object({ id: ReportIdSchema }).strict(), result: ReportExportChosenResultSchema },
  'reports.remove': { params: z.object({ id: ReportIdSchema }).strict(), result: z.object({ removed: z.string() }) },
  /** A Chrome trace-event JSON of a benchmark run's measured steps (also written to runs/<id>/trace.json). */
  'runs.trace': { params: z.object({ id: IdSchema }).strict(), result: RunTraceResultSchema },
  /** Two saved benchmark runs, the second judged against the first by the regression gate's rule (nothing runs). */
  'runs.compareSpeed': { params: CompareSpeedParamsSchema, result: CheckResultSchema },
  /** Built-in models and the model spec files of the workspace (top folder and models/), unusable ones with their problem. */
  'models.list': { params: NoParams, result: z.array(ModelEntrySchema) },
  /** A workspace spec file (a path from models.list), checked against the contract. */
  'models.readSpec': { params: ReadSpecRequestSchema, result: ReadSpecResultSchema },
  /**
   * Saves a spec as models/<name>.json (a model sized to a dataset, edited in the form); an existing file is
   * refused unless overwrite, a link or folder at the name always. Answers the path models.list names it by.
   */
  'models.save': { params: SaveSpecRequestSchema, result: SaveSpecResultSchema },
} as const;

export type ApiMethods = typeof apiMethods;
export type MethodName = keyof ApiMethods;
export type MethodParams<M extends MethodName> = z.input<ApiMethods[M]['params']>;
export type MethodResult<M extends MethodName> = z.infer<ApiMethods[M]['result']>;

/** The methods that measure either target, with each target's result (one schema for a benchmark's and a wizard's, narrowed here by its target). */
interface EitherTargetResults {
  'train.run': { engine: EngineTrainRun; script: ScriptTrainRun };
  'benchmark.training': { engine: EngineBenchmarkResult; script: ScriptBenchmarkResult };
  'optimise.start': { engine: EngineOptimiseResult; script: ScriptOptimiseResult };
}

/**
 * A method's result for these params: the one of the target the request names, where the method measures
 * either (the router answers the form it was asked in), else the method's result.
 */
export type ResultFor<M extends MethodName, P> = M extends keyof EitherTargetResults
  ? P extends { target: { kind: 'script' } }
    ? EitherTargetResults[M]['script']
    : EitherTargetResults[M]['engine']
  : MethodResult<M>;

export const methodNames = Object.keys(apiMethods) as MethodName[];

/** Every method that starts a job is a method of the contract (checked by the compiler). */
export const jobMethodNames: readonly MethodName[] = Object.keys(JOB_METHODS) as JobMethod[];

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(apiMethods, name);
}
