import path from 'node:path';

import type { TelemetrySample } from '../../api/telemetry';
import { TelemetrySampleSchema } from '../../api/telemetry';
import { EvenThinner, type FileCut, jsonlLinesBounded } from './jsonl-lines';
import type { Workspace } from './workspace';
import { listFolder, MiB, WorkspaceFileError } from './workspace-files';

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

/** A run's telemetry files: telemetry.jsonl (a training run), or one per benchmark repetition or wizard launch. */
const TELEMETRY_FILE = /^telemetry(?:-rep(\d{1,6}))?\.jsonl$/;
/** Files read for one answer at most: a wizard writes one a launch (15 by default); thousands are not a run Trainbench wrote. */
const MAX_TELEMETRY_FILES = 256;
/** The least of the read budget one file gets when many share it. */
const MIN_FILE_READ_BYTES = MiB;

/**
 * The GPU and host telemetry a run recorded (runs/<id>/telemetry.jsonl, or its telemetry-rep<i>.jsonl files: a
 * benchmark's and a wizard's), oldest first, thinned evenly to MAX_TELEMETRY_SAMPLES; lines that do not match the
 * schema are skipped, and a file that is a link or special file is left out. The files share one read budget, so
 * a run of many files costs what a run of one does.
 */
export async function readRunTelemetry(workspace: Workspace, id: string): Promise<TelemetrySample[]> {
  return (await readRunTelemetryCut(workspace, id)).samples;
}

/** readRunTelemetry's samples, and `cut`: the files too large to read whole, and files left out (runs.get says so). */
export async function readRunTelemetryCut(workspace: Workspace, id: string): Promise<{ samples: TelemetrySample[]; cut: FileCut[] }> {
  const dir = path.posix.join('runs', id);
  const found = (await listFolder(workspace, dir).catch(() => []))
    .flatMap((e) => {
      const m = e.kind === 'file' ? TELEMETRY_FILE.exec(e.name) : null;
      return m ? [{ name: e.name, rep: m[1] === undefined ? 0 : Number(m[1]) }] : [];
    })
    .sort((a, b) => a.rep - b.rep);
  const files = found.slice(0, MAX_TELEMETRY_FILES);
  const budget = Math.max(MIN_FILE_READ_BYTES, Math.floor(MAX_TELEMETRY_READ_BYTES / Math.max(1, files.length)));
  const cut: FileCut[] = [];
  const samples: TelemetrySample[] = [];
  for (const { name } of files) {
    const read = await readTelemetryBounded(workspace, path.posix.join(dir, name), budget);
    samples.push(...read.samples);
    if (read.cut) cut.push(read.cut);
  }
  if (found.length > files.length) {
    const note = `runs/${id} holds ${found.length} telemetry files; the first ${files.length} were read`;
    cut.push({ file: dir, sizeBytes: 0, readBytes: 0, note });
  }
  if (files.length < 2) return { samples, cut };
  const thinner = new EvenThinner<TelemetrySample>(MAX_TELEMETRY_SAMPLES);
  for (const s of samples.sort((a, b) => a.t - b.t)) thinner.push(() => s);
  return { samples: thinner.result(), cut };
}

/** One telemetry file, at most `maxBytes` of it read, thinned; and what was left out. */
async function readTelemetryBounded(workspace: Workspace, file: string, maxBytes = MAX_TELEMETRY_READ_BYTES): Promise<{ samples: TelemetrySample[]; cut: FileCut | null }> {
  const thinner = new EvenThinner<TelemetrySample>(MAX_TELEMETRY_SAMPLES);
  let cut: FileCut | null = null;
  try {
    const read = await jsonlLinesBounded(workspace, file, MAX_SAMPLE_LINE_BYTES, maxBytes);
    cut = read.cut;
    for await (const batch of read.batches) for (const line of batch) thinner.push(() => sampleOf(line));
  } catch (err) {
    // A link or special file where the telemetry belongs: the run is shown without it.
    if (!(err instanceof WorkspaceFileError)) throw err;
  }
  return { samples: thinner.result(), cut };
}
