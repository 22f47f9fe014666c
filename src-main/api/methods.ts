import { z } from 'zod';

import { BatchSearchRequestSchema, BatchSearchResultSchema } from './batch-size';
import { TrainingBenchmarkRequestSchema, TrainingBenchmarkResultSchema } from './benchmark';
import { IdSchema } from './ids';
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
import { DevicesSchema, EngineVersionSchema, PingResultSchema } from './devices';
import { EngineStatusEventSchema } from './events';
import { ModelInfoSchema, ModelSpecSchema } from './model-spec';
import { ModelEntrySchema, ReadSpecRequestSchema, ReadSpecResultSchema } from './model-files';
import { TelemetrySnapshotSchema, TelemetrySubscribeSchema } from './telemetry';
import { RunDetailSchema, RunSummarySchema, TrainRequestSchema, TrainResultSchema } from './training';
import {
  BuildRequestSchema,
  BuildResultSchema,
  DatasetSummarySchema,
  FileEntrySchema,
  InspectResultSchema,
  LoaderBenchRequestSchema,
  LoaderBenchResultSchema,
  SourceSpecSchema,
  VerifyResultSchema,
} from './datasets';
import { OptimiseIdParamsSchema, OptimiseRequestSchema, OptimiseResultSchema, WizardStateSchema } from './optimise';
import { ScriptTrainRequestSchema, ScriptTrainResultSchema } from './script-run';
import { ScriptBenchmarkRequestSchema, ScriptBenchmarkResultSchema, ScriptOptimiseRequestSchema, ScriptOptimiseResultSchema } from './script-target';
import { ScriptBatchSearchRequestSchema, ScriptBatchSearchResultSchema } from './script-target';
import { ScriptOptimiseRecordSchema } from './script-target';

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
  'model.info': { params: z.object({ spec: ModelSpecSchema }).strict(), result: ModelInfoSchema },
  /** Every running job (training, benchmark, batch-size search, wizard, dataset build) with its events so far. */
  'jobs.list': { params: NoParams, result: z.array(JobInfoSchema) },
  /** Stops any job by its id: a run at its next step, a script's process group at once; a wizard's state stays saved. */
  'jobs.cancel': { params: JobCancelParamsSchema, result: JobCancelResultSchema },
  /** Trains to completion; progress arrives as train.progress events with the same runId. */
  'train.run': { params: TrainRequestSchema, result: TrainResultSchema },
  'train.cancel': { params: z.object({ runId: IdSchema }).strict(), result: z.object({ cancelled: z.boolean() }) },
  /** Searches the batch size that fits with headroom and trains fastest; trials arrive as batchSize.trial events. */
  'batchSize.search': { params: BatchSearchRequestSchema, result: BatchSearchResultSchema },
  'batchSize.cancel': { params: z.object({ searchId: IdSchema }).strict(), result: z.object({ cancelled: z.boolean() }) },
  'runs.list': { params: NoParams, result: z.array(RunSummarySchema) },
  'runs.get': { params: z.object({ id: IdSchema }).strict(), result: RunDetailSchema },
  'datasets.list': { params: NoParams, result: z.array(DatasetSummarySchema) },
  /** Detected fields, record count and a preview of a source, before building. */
  'datasets.inspect': { params: z.object({ source: SourceSpecSchema }).strict(), result: InspectResultSchema },
  /** Builds a cache; progress arrives as datasets.progress events with the request's jobId. */
  'datasets.build': { params: BuildRequestSchema, result: BuildResultSchema },
  'datasets.cancel': { params: z.object({ jobId: IdSchema }).strict(), result: z.object({ cancelled: z.boolean() }) },
  'datasets.verify': { params: z.object({ id: IdSchema }).strict(), result: VerifyResultSchema },
  'datasets.remove': { params: z.object({ id: IdSchema }).strict(), result: z.object({ removed: z.string() }) },
  /** The loader on the cache (and on the source in place) at each setting. */
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
  /** Runs the training benchmark to completion; progress arrives as benchmark.progress events with the request's jobId. */
  'benchmark.training': { params: TrainingBenchmarkRequestSchema, result: TrainingBenchmarkResultSchema },
  'benchmark.cancel': { params: z.object({ jobId: IdSchema }).strict(), result: z.object({ cancelled: z.boolean() }) },
  /** Benchmarks the user's own training command (a script target); its output arrives as script.output events, progress as benchmark.progress. */
  'script.benchmark': { params: ScriptBenchmarkRequestSchema, result: ScriptBenchmarkResultSchema },
  'script.cancel': { params: z.object({ jobId: IdSchema }).strict(), result: z.object({ cancelled: z.boolean() }) },
  /** The optimisation wizard on a script target (overrides one at a time); progress arrives as optimise.progress events. */
  'script.optimise': { params: ScriptOptimiseRequestSchema, result: ScriptOptimiseResultSchema },
  /** Runs the optimisation wizard to completion (or cancellation); progress arrives as optimise.progress events with the optimiseId. */
  'optimise.start': { params: OptimiseRequestSchema, result: OptimiseResultSchema },
  /** Stops the wizard at once (the trial in progress is dropped and run again on resume); its state stays saved for optimise.resume. */
  'optimise.cancel': { params: OptimiseIdParamsSchema, result: z.object({ cancelled: z.boolean() }) },
  /** Continues a cancelled or interrupted wizard from its saved state. */
  'optimise.resume': { params: OptimiseIdParamsSchema, result: OptimiseResultSchema },
  /** The saved state of a wizard (live, cancelled, interrupted or finished). */
  'optimise.state': { params: OptimiseIdParamsSchema, result: WizardStateSchema },
  /** Files in a folder of the workspace, for choosing a source to import. */
  'files.list': { params: z.object({ dir: z.string().default('') }).strict(), result: z.object({ dir: z.string(), entries: z.array(FileEntrySchema) }) },
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
  /**
   * Trains with the user's own command to its end (or maxSteps), recorded as a run of kind train; progress arrives as
   * script.progress events and its output as script.output events, both with the request's runId (also script.cancel's jobId).
   */
  'script.train': { params: ScriptTrainRequestSchema, result: ScriptTrainResultSchema },
  /** Built-in models and the model spec files of the workspace (top folder and models/), unusable ones with their problem. */
  'models.list': { params: NoParams, result: z.array(ModelEntrySchema) },
  /** A workspace spec file (a path from models.list), checked against the contract. */
  'models.readSpec': { params: ReadSpecRequestSchema, result: ReadSpecResultSchema },
  /**
   * The batch-size search on a script target (dataloader.batch_size varied, an OOM a data point); trials arrive as
   * script.batchTrial events and the script's output as script.output, both with the request's jobId; script.cancel stops it.
   */
  'script.findBatchSize': { params: ScriptBatchSearchRequestSchema, result: ScriptBatchSearchResultSchema },
  /**
   * What a script optimisation (a run of kind optimise on a script target) has measured so far: its result once
   * completed, else its state saved after the baseline and each trial (running, killed); null before its baseline.
   */
  'script.optimiseState': { params: z.object({ runId: IdSchema }).strict(), result: ScriptOptimiseRecordSchema.nullable() },
} as const;

export type ApiMethods = typeof apiMethods;
export type MethodName = keyof ApiMethods;
export type MethodParams<M extends MethodName> = z.input<ApiMethods[M]['params']>;
export type MethodResult<M extends MethodName> = z.infer<ApiMethods[M]['result']>;

export const methodNames = Object.keys(apiMethods) as MethodName[];

/** Every method that starts a job is a method of the contract (checked by the compiler). */
export const jobMethodNames: readonly MethodName[] = Object.keys(JOB_METHODS) as JobMethod[];

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(apiMethods, name);
}
