import path from 'node:path';

import type { TelemetrySample } from '../../api/telemetry';
import { TelemetrySampleSchema } from '../../api/telemetry';
import { EvenThinner, jsonlLines } from './jsonl-lines';
import type { Workspace } from './workspace';
import { WorkspaceFileError } from './workspace-files';

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
 * The GPU and host telemetry a run recorded (runs/<id>/telemetry.jsonl), thinned
 * evenly to MAX_TELEMETRY_SAMPLES; lines that do not match the schema are skipped,
 * and a run without the file (or with a link or special file in its place) has none.
 */
export async function readRunTelemetry(workspace: Workspace, id: string): Promise<TelemetrySample[]> {
  return readTelemetryFile(workspace, path.join('runs', id, 'telemetry.jsonl'));
}

/** One telemetry file of the workspace, streamed and thinned as readRunTelemetry says. */
export async function readTelemetryFile(workspace: Workspace, file: string): Promise<TelemetrySample[]> {
  const thinner = new EvenThinner<TelemetrySample>(MAX_TELEMETRY_SAMPLES);
  try {
    for await (const line of jsonlLines(workspace, file, MAX_SAMPLE_LINE_BYTES)) {
      thinner.push(() => sampleOf(line));
    }
  } catch (err) {
    // A link or special file where the telemetry belongs: the run is shown without it.
    if (!(err instanceof WorkspaceFileError)) throw err;
  }
  return thinner.result();
}
