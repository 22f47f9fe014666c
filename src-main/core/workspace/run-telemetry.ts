import path from 'node:path';

import type { TelemetrySample } from '../../api/telemetry';
import { TelemetrySampleSchema } from '../../api/telemetry';
import { EvenThinner, type FileCut, jsonlLinesBounded } from './jsonl-lines';
import type { Workspace } from './workspace';
import { MiB, WorkspaceFileError } from './workspace-files';

/** Samples runs.get returns at most: enough for a chart a few thousand pixels wide. */
export const MAX_TELEMETRY_SAMPLES = 2000;
/**
 * A sample of 8 GPUs and 256 cores is about 5 KB; a longer line is not one the sampler wrote. The cap
 * bounds a request's memory: at most 2 x MAX_TELEMETRY_SAMPLES lines are held while a file is thinned
 * (64 MiB at this cap; 256 KiB lines once let three requests exhaust the heap).
 */
const MAX_SAMPLE_LINE_BYTES = 16 * 1024;

/** One line of telemetry.jsonl as a sample, or null for a line that is not one (cut off by a kill, or foreign). */
function sampleOf(line: string): TelemetrySample | null {
  try {
    const parsed = TelemetrySampleSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Bytes of a telemetry file read for one answer: at a sample a second (up to ~5 KB with 8 GPUs), hours
 * of it are read whole; a larger file is read in pieces spread over it (jsonlLinesBounded), never whole.
 */
export const MAX_TELEMETRY_READ_BYTES = 64 * MiB;

/**
 * The GPU and host telemetry a run recorded (runs/<id>/telemetry.jsonl), thinned
 * evenly to MAX_TELEMETRY_SAMPLES; lines that do not match the schema are skipped,
 * and a run without the file (or with a link or special file in its place) has none.
 */
export async function readRunTelemetry(workspace: Workspace, id: string): Promise<TelemetrySample[]> {
  return (await readRunTelemetryCut(workspace, id)).samples;
}

/** readRunTelemetry's samples, and `cut` when the file was too large to read whole (runs.get says so). */
export async function readRunTelemetryCut(workspace: Workspace, id: string): Promise<{ samples: TelemetrySample[]; cut: FileCut | null }> {
  return readTelemetryBounded(workspace, path.join('runs', id, 'telemetry.jsonl'));
}

/** One telemetry file of the workspace, thinned as readRunTelemetry says. */
export async function readTelemetryFile(workspace: Workspace, file: string): Promise<TelemetrySample[]> {
  return (await readTelemetryBounded(workspace, file)).samples;
}

/** One telemetry file, at most MAX_TELEMETRY_READ_BYTES of it read, thinned; and what was left out. */
async function readTelemetryBounded(workspace: Workspace, file: string): Promise<{ samples: TelemetrySample[]; cut: FileCut | null }> {
  const thinner = new EvenThinner<TelemetrySample>(MAX_TELEMETRY_SAMPLES);
  let cut: FileCut | null = null;
  try {
    const read = await jsonlLinesBounded(workspace, file, MAX_SAMPLE_LINE_BYTES, MAX_TELEMETRY_READ_BYTES);
    cut = read.cut;
    for await (const batch of read.batches) for (const line of batch) thinner.push(() => sampleOf(line));
  } catch (err) {
    // A link or special file where the telemetry belongs: the run is shown without it.
    if (!(err instanceof WorkspaceFileError)) throw err;
  }
  return { samples: thinner.result(), cut };
}
