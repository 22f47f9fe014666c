import { z } from 'zod';

import { ApiErrorSchema } from './errors';
import { formatIssues, jsonProblem } from './format-issues';

/**
 * Version of runs/<id>/run.json this Trainbench writes; it reads every version
 * up to this one. 2 added `owner` and `heartbeatAt`, so a run whose process is
 * gone can be told from one still training.
 */
export const RUN_SCHEMA_VERSION = 2;

/** How often a live run rewrites its heartbeat. */
export const RUN_HEARTBEAT_INTERVAL_MS = 10_000;
/**
 * A running record whose heartbeat is older than this is interrupted, as judged
 * by a reader on any host (six missed beats: slack for a busy disk or a little
 * clock skew between hosts sharing a workspace).
 */
export const RUN_HEARTBEAT_STALE_MS = 60_000;

/** Statuses as stored. `interrupted` is never stored: readers derive it from a `running` record whose owner is gone. */
export const StoredRunStatusSchema = z.enum(['running', 'completed', 'failed', 'cancelled']);
export type StoredRunStatus = z.infer<typeof StoredRunStatusSchema>;

/** The process that runs (or ran) the run, and when it took it. */
export const RunOwnerSchema = z.object({
  pid: z.number().int().positive(),
  host: z.string().min(1),
  startedAt: z.iso.datetime(),
});

/** What a run computed on (runs from before this was recorded lack it). */
export const RunComputeDeviceSchema = z.looseObject({
  /** cpu or cuda:N, 'auto' resolved. */
  id: z.string(),
  name: z.string(),
  /** The emulated CUDA device (CUDA code run on the CPU to check it): no timing of the run is a GPU figure. */
  emulated: z.boolean().optional(),
});
export type RunComputeDevice = z.infer<typeof RunComputeDeviceSchema>;

export const RunEnvironmentSchema = z.looseObject({
  platform: z.string(),
  arch: z.string(),
  node: z.string(),
  cpus: z.number().int(),
  cpuModel: z.string(),
  totalMemoryBytes: z.number(),
  hostname: z.string(),
  /** Which Trainbench measured the run (runs from before this was recorded lack it). */
  trainbench: z.string().optional(),
  /** Its git commit when it ran from a checkout. */
  trainbenchCommit: z.string().optional(),
  computeDevice: RunComputeDeviceSchema.optional(),
});
export type RunEnvironment = z.infer<typeof RunEnvironmentSchema>;

/*
 * The parts of a run's config and result that the Runs list reads. The rest of
 * them belongs to the kind's own schema (TrainRequest and TrainRunResult, the loader
 * benchmark's request and result), so a run recorded before a field was added
 * still reads.
 */
const RunConfigViewSchema = z.looseObject({
  spec: z.looseObject({ family: z.string() }).partial().optional(),
  cachedData: z.looseObject({ description: z.string() }).partial().optional(),
  dataset: z.string().optional(),
});
const TestViewSchema = z.looseObject({ accuracy: z.number().nullable() }).partial().optional();
const RunResultViewSchema = z.looseObject({
  /** An engine training run's held-out evaluation: inside `target` since both targets share one result, at the top before. */
  test: TestViewSchema,
  target: z.looseObject({ test: TestViewSchema }).partial().optional(),
  samplesPerSec: z.number().optional(),
  telemetry: z.looseObject({ gpuUtilizationMean: z.number().nullable() }).partial().optional(),
  dataset: z.string().optional(),
});

/** runs/<id>/run.json. */
export const RunRecordSchema = z.looseObject({
  schemaVersion: z.number().int().min(1).max(RUN_SCHEMA_VERSION),
  id: z.string().min(1),
  /** 'train', 'loader-benchmark', ... */
  kind: z.string().min(1),
  status: StoredRunStatusSchema,
  createdAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().optional(),
  config: RunConfigViewSchema,
  environment: RunEnvironmentSchema.optional(),
  /** Version 2 on; absent in records written before. */
  owner: RunOwnerSchema.optional(),
  /** Rewritten every RUN_HEARTBEAT_INTERVAL_MS while the run is live (version 2 on). */
  heartbeatAt: z.iso.datetime().optional(),
  result: RunResultViewSchema.optional(),
  error: ApiErrorSchema.optional(),
});
export type RunRecordJson = z.infer<typeof RunRecordSchema>;

const VersionOnlySchema = z.looseObject({ schemaVersion: z.number().int() });

/** Parses run.json's text; `problem` says what is wrong and what to do, in one line. */
export function parseRunRecord(text: string): { record: RunRecordJson; problem: null } | { record: null; problem: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { record: null, problem: `run.json is ${jsonProblem(err)}` };
  }
  // Checked first and alone: a newer file may differ in any field, and the version is what explains it.
  const version = VersionOnlySchema.safeParse(raw);
  if (version.success && version.data.schemaVersion > RUN_SCHEMA_VERSION) {
    return {
      record: null,
      problem: `run.json was written by a newer Trainbench (schema version ${version.data.schemaVersion}; this one reads up to ${RUN_SCHEMA_VERSION}): update Trainbench to read it`,
    };
  }
  const parsed = RunRecordSchema.safeParse(raw);
  if (!parsed.success) return { record: null, problem: `run.json does not match its schema: ${formatIssues(parsed.error, 'run')}` };
  return { record: parsed.data, problem: null };
}
