import { createReadStream, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ApiError } from '../api/errors';
import type { RunRecordJson } from '../api/run-record';
import { parseRunRecord, RUN_HEARTBEAT_INTERVAL_MS, RUN_HEARTBEAT_STALE_MS } from '../api/run-record';
import type { RunDetail, RunLastStep, RunSummary, TrainEvent } from '../api/training';
import { TrainEventSchema, TrainStepEventSchema } from '../api/training';
import type { Workspace } from './workspace';
import { processExists } from './process-exists';
import { readRunTelemetry } from './run-telemetry';

const MAX_STEP_EVENTS = 2000;
/** How much of the end of events.jsonl is read first to find the last step (a step event is ~400 bytes). */
const TAIL_BYTES = 64 * 1024;

/** Whether a process with this pid exists here (EPERM: it exists but belongs to someone else). */
/** "95 s", "12 min", "5 h", "31 days": how long a heartbeat has been missing, in the unit a person reads. */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 2 * 3600) return `${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} days`;
}

/**
 * Why a `running` record is in fact interrupted, or null while it may still be
 * live: on this host its owner's pid is gone; on any host its heartbeat is
 * older than RUN_HEARTBEAT_STALE_MS (which also covers a pid reused after a reboot).
 */
export function interruptionOf(record: RunRecordJson, now: number = Date.now()): string | null {
  if (record.status !== 'running') return null;
  const lastSign = record.heartbeatAt ?? record.createdAt;
  const owner = record.owner;
  if (owner && owner.host === os.hostname() && !processExists(owner.pid)) {
    return `its process ${owner.pid} on ${owner.host} is gone (last heartbeat ${lastSign})`;
  }
  const age = now - Date.parse(lastSign);
  if (age > RUN_HEARTBEAT_STALE_MS) {
    const who = owner ? `process ${owner.pid} on ${owner.host}` : 'its process';
    return `no heartbeat from ${who} for ${duration(age)} (last ${lastSign}; a live run writes one every ${RUN_HEARTBEAT_INTERVAL_MS / 1000} s)`;
  }
  return null;
}

/** The last step event in events.jsonl, read from the end; a line cut off by a kill is skipped. */
export async function lastStepOf(file: string): Promise<RunLastStep | null> {
  const handle = await fs.open(file, 'r').catch(() => null);
  if (!handle) return null;
  try {
    const size = (await handle.stat()).size;
    for (let window = TAIL_BYTES; ; window *= 4) {
      const start = Math.max(0, size - window);
      const buffer = Buffer.alloc(size - start);
      await handle.read(buffer, 0, buffer.length, start);
      const lines = buffer.toString('utf8').split('\n');
      if (start > 0) lines.shift(); // starts mid-line
      for (let i = lines.length - 1; i >= 0; i--) {
        const step = parseStep(lines[i]);
        if (step) return { epoch: step.epoch, epochs: step.epochs, globalStep: step.globalStep, totalSteps: step.totalSteps };
      }
      if (start === 0) return null;
    }
  } finally {
    await handle.close();
  }
}

function parseStep(line: string) {
  if (!line.trim()) return null;
  try {
    const parsed = TrainStepEventSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : null;
  } catch {
    return null; // cut off by a crash
  }
}

/**
 * Kinds whose result has no single samples/s: the loader benchmark's best cached
 * setting, the optimisation's final configuration, and the batch-size search's
 * recommended trial, so the list shows a rate.
 */
function headlineRate(run: RunRecordJson): number | null {
  const result = run.result as { cached?: { samplesPerSec?: unknown }[]; trials?: { batchSize?: unknown; accumulation?: unknown; samplesPerSec?: unknown }[]; recommended?: unknown } | undefined;
  const rates = (xs: { samplesPerSec?: unknown }[]) => xs.map((x) => x.samplesPerSec).filter((x): x is number => typeof x === 'number');
  if (run.kind === 'loader-benchmark' && Array.isArray(result?.cached)) {
    const r = rates(result.cached);
    return r.length ? Math.max(...r) : null;
  }
  const final = (run.result as { final?: { samplesPerSec?: { median?: unknown } } } | undefined)?.final;
  if (run.kind === 'optimise' && typeof final?.samplesPerSec?.median === 'number') return final.samplesPerSec.median;
  if (run.kind === 'batch-search' && Array.isArray(result?.trials)) {
    const r = rates(result.trials.filter((t) => t.batchSize === result.recommended && t.accumulation === 1));
    return r.length ? Math.max(...r) : null;
  }
  return null;
}

/** Longest command a title shows whole; the full argv stays in the run's config. */
const COMMAND_TITLE_CHARS = 100;

/**
 * A script's command as a title: whole when short; else its absolute paths as
 * their last part ("python3 train.py --epochs 3": the arguments that tell runs
 * apart stay), and if still long, its middle cut.
 */
export function commandTitle(argv: readonly string[]): string {
  const whole = argv.join(' ');
  if (whole.length <= COMMAND_TITLE_CHARS) return whole;
  const short = argv.map((a) => (a.startsWith('/') && a.length > 1 ? path.posix.basename(a) : a)).join(' ');
  if (short.length <= COMMAND_TITLE_CHARS) return short;
  const half = Math.floor((COMMAND_TITLE_CHARS - 1) / 2);
  return `${short.slice(0, half)}…${short.slice(short.length - half)}`;
}

async function summarize(workspace: Workspace, id: string, run: RunRecordJson): Promise<RunSummary> {
  // A run cancelled while its data was prepared has no caches yet: the data source it asked for names it.
  const asked = (run.config as { data?: { kind?: unknown } }).data?.kind;
  // A script target (the user's own command) is named by its command, an engine target by its model and data.
  const target = (run.config as { target?: { kind?: unknown; command?: unknown } }).target;
  const command = target?.kind === 'script' && Array.isArray(target.command) ? commandTitle(target.command.map(String)) : null;
  const modelOnData =
    command !== null
      ? `script ${command}`
      : `${run.config.spec?.family ?? 'model'} on ${run.config.cachedData?.description ?? (typeof asked === 'string' ? asked : 'data')}`;
  const titles: Record<string, string> = {
    train: modelOnData,
    benchmark: `training benchmark: ${modelOnData}`,
    'batch-search': `batch-size search: ${modelOnData}`,
    optimise: `optimisation: ${modelOnData}`,
    'loader-benchmark': `loader benchmark of ${run.result?.dataset ?? run.config.dataset ?? 'a dataset'}`,
  };
  const title = titles[run.kind] ?? run.kind;
  const interruption = interruptionOf(run);
  const unfinished = run.status === 'running';
  return {
    id,
    kind: run.kind,
    status: interruption ? 'interrupted' : run.status,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt ?? null,
    title,
    testAccuracy: run.result?.test?.accuracy ?? null,
    samplesPerSec: run.result?.samplesPerSec ?? headlineRate(run),
    gpuUtilizationMean: run.result?.telemetry?.gpuUtilizationMean ?? null,
    error: run.error ? `${run.error.code}: ${run.error.message}` : null,
    lastStep: unfinished ? await lastStepOf(workspace.resolve(path.join('runs', id, 'events.jsonl'))) : null,
    interruption,
    problem: null,
  };
}

function unreadable(id: string, problem: string): RunSummary {
  return {
    id,
    kind: 'unknown',
    status: 'unreadable',
    createdAt: '',
    finishedAt: null,
    title: id,
    testAccuracy: null,
    samplesPerSec: null,
    gpuUtilizationMean: null,
    error: null,
    lastStep: null,
    interruption: null,
    problem,
  };
}

/** run.json through its schema: the record, or the problem in words. */
async function readRun(workspace: Workspace, id: string): Promise<{ record: RunRecordJson; problem: null } | { record: null; problem: string }> {
  const file = workspace.resolve(path.join('runs', id, 'run.json'));
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    return { record: null, problem: `cannot read ${file}: ${(err as Error).message}` };
  }
  return parseRunRecord(text);
}

/** Every run, newest first; an unreadable run.json is listed with its problem, never fatal. */
export async function listRuns(workspace: Workspace): Promise<RunSummary[]> {
  const ids = await fs.readdir(workspace.resolve('runs')).catch(() => [] as string[]);
  const out: RunSummary[] = [];
  for (const id of ids.filter((name) => !name.startsWith('.')).sort().reverse()) {
    const { record, problem } = await readRun(workspace, id);
    out.push(record ? await summarize(workspace, id, record) : unreadable(id, problem));
  }
  return out;
}

/** One run with its events; step events are thinned evenly so a long run still charts quickly. */
export async function readRunDetail(workspace: Workspace, id: string): Promise<RunDetail> {
  if (!/^[\w.-]+$/.test(id)) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(id)} is not a run id`);
  const dir = workspace.resolve(path.join('runs', id));
  if (!(await fs.stat(dir).catch(() => null))?.isDirectory()) {
    throw new ApiError('E_BAD_INPUT', `there is no run ${id} in the workspace ${workspace.root} (trainbench runs lists them)`);
  }
  const { record, problem } = await readRun(workspace, id);
  if (!record) throw new ApiError('E_DATA', `run ${id} cannot be read: ${problem}`);
  const kept = await readThinnedEvents(workspace.resolve(path.join('runs', id, 'events.jsonl')));
  return { summary: await summarize(workspace, id, record), record, events: kept, telemetry: await readRunTelemetry(workspace, id) };
}

/** Lines longer than this are not events the engine wrote (a step event is ~400 bytes): skipped unparsed. */
const MAX_EVENT_LINE_BYTES = 64 * 1024;

/**
 * events.jsonl streamed, never held whole: step events are thinned as they
 * arrive (every stride-th kept, the stride doubling whenever more than twice
 * MAX_STEP_EVENTS are held), so memory stays bounded however long the run was
 * and the event loop keeps serving while a large file is read. Epoch events
 * are all kept, in file order; the last step is always kept.
 */
async function readThinnedEvents(file: string): Promise<TrainEvent[]> {
  let events: TrainEvent[] = [];
  let stepsHeld = 0;
  let stride = 1;
  let seen = 0;
  let last: TrainEvent | null = null;
  const take = (line: string) => {
    if (!line.trim() || line.length > MAX_EVENT_LINE_BYTES) return;
    let parsed;
    try {
      parsed = TrainEventSchema.safeParse(JSON.parse(line));
    } catch {
      return; // a line cut off by a crash: the rest still counts
    }
    if (!parsed.success) return;
    const e = parsed.data;
    if (e.type === 'step') {
      last = e;
      if (seen++ % stride !== 0) return;
      stepsHeld++;
    }
    events.push(e);
    if (stepsHeld > 2 * MAX_STEP_EVENTS) {
      stride *= 2;
      let nth = 0;
      events = events.filter((x) => x.type !== 'step' || nth++ % 2 === 0);
      stepsHeld = nth - Math.floor(nth / 2);
    }
  };
  let rest = '';
  let skipping = false;
  try {
    for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
      const lines = (rest + (chunk as string)).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (!skipping) take(line);
        skipping = false;
      }
      // An endless line is dropped as it streams, not buffered.
      if (rest.length > MAX_EVENT_LINE_BYTES) {
        rest = '';
        skipping = true;
      }
    }
  } catch {
    // no events.jsonl (a run that never stepped) or one that went away: what was read counts
  }
  if (!skipping) take(rest);
  if (stepsHeld > MAX_STEP_EVENTS) {
    // The held steps are evenly spaced: one last even pass brings them to the limit.
    const k = Math.ceil(stepsHeld / MAX_STEP_EVENTS);
    let nth = 0;
    events = events.filter((x) => x.type !== 'step' || nth++ % k === 0);
  }
  const lastStep = last;
  if (lastStep !== null && !events.includes(lastStep)) {
    // After the last held step, before any epoch event that followed it in the file.
    let at = events.length;
    while (at > 0 && events[at - 1].type !== 'step') at--;
    events.splice(at, 0, lastStep);
  }
  return events;
}
