import os from 'node:os';
import path from 'node:path';

import { ID_PATTERN } from '../../api/ids';
import { datasetNameOfId } from '../../api/datasets';
import { printable } from '../../api/shell-word';
import type { RunRecordJson } from '../../api/run-record';
import { RUN_HEARTBEAT_INTERVAL_MS, RUN_HEARTBEAT_STALE_MS } from '../../api/run-record';
import { optimiseTargetTitle } from '../../api/optimise';
import { modelWords } from '../../api/model-spec';
import type { RunDetail, RunLastStep, RunSummary, RunWizard, TrainEvent } from '../../api/training';
import { DataSourceSchema, TrainEventSchema, TrainStepEventSchema } from '../../api/training';
import type { Workspace } from './workspace';
import { type FileCut, jsonlLinesBounded } from './jsonl-lines';
import { processExists } from '../common/process-exists';
import { LIST_READS_AT_ONCE, mapAtOnce } from '../common/map-at-once';
import { readRunAnnotation } from './run-notes';
import { readRunTelemetryCut } from './run-telemetry';
import { MAX_RUN_JSON_BYTES, readRun, requireRun, runReadBudget } from './run-file';
import { entryProblem, type FolderEntry, isMissing, listFolder, MiB, readTail, readTextCapped } from './workspace-files';

const MAX_STEP_EVENTS = 2000;
/**
 * How much of the end of events.jsonl is read to find the last step: 64 KiB first (a step event is
 * ~400 bytes), then 1 MiB past a damaged tail, never more however large the file, so a list of
 * "running" runs costs bounded memory per request.
 */
const TAIL_WINDOWS = [64 * 1024, MiB];
/** A run's title and message in the list are cut here: every run of a list holds them, whatever its file says. */
const MAX_TITLE_CHARS = 300;
const MAX_MESSAGE_CHARS = 2000;
const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (${(text.length - max).toLocaleString('en-US')} more characters)` : text);
/** Bytes of events.jsonl read for runs.get (~80,000 step events); a larger file is read in pieces spread over it. */
// About 2 hours of a run's events at the default 50 ms interval are read whole (every epoch event kept); only a
// larger (or planted sparse) file is read in spread windows, and the answer says so.
const MAX_EVENTS_READ_BYTES = 64 * MiB;

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

/**
 * The last step event in events.jsonl, from its last TAIL_WINDOWS bytes; a line cut off by a kill is
 * skipped. Null when there is none there (or no file, or a link or special file in its place).
 */
export async function lastStepOf(workspace: Workspace, file: string): Promise<RunLastStep | null> {
  for (const window of TAIL_WINDOWS) {
    let tail: string;
    try {
      tail = await readTail(workspace, file, window);
    } catch {
      return null;
    }
    const lines = tail.split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const step = parseStep(lines[i]);
      if (step) return step;
    }
  }
  return null;
}

/** An engine step event, or rank 0's step of a script run (which knows no epochs or total). */
function parseStep(line: string): RunLastStep | null {
  if (!line.trim()) return null;
  try {
    const value: unknown = JSON.parse(line);
    const parsed = TrainStepEventSchema.safeParse(value);
    if (parsed.success) return { epoch: parsed.data.epoch, epochs: parsed.data.epochs, globalStep: parsed.data.globalStep, totalSteps: parsed.data.totalSteps };
    const script = value as { type?: unknown; rank?: unknown; step?: unknown };
    if (script.type === 'script.step' && script.rank === 0 && Number.isInteger(script.step)) return { epoch: null, epochs: null, globalStep: script.step as number, totalSteps: null };
    return null;
  } catch {
    return null;
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
    // A script's trials have no accumulation: each is one batch.
    const r = rates(result.trials.filter((t) => t.batchSize === result.recommended && (t.accumulation ?? 1) === 1));
    return r.length ? Math.max(...r) : null;
  }
  return null;
}

/** Longest command a title shows whole; the full argv stays in the run's config. */
const COMMAND_TITLE_CHARS = 100;

/**
 * A script's command as a title: whole when short; else its absolute paths as
 * their last part ("python3 train.py --epochs 3": the arguments that tell runs
 * apart stay), and if still long, its middle cut. A control character in a
 * planted run.json shows escaped (\x1b, \r), so the title cannot redraw a terminal.
 */
export function commandTitle(argv: readonly string[]): string {
  const whole = printable(argv.join(' '));
  if (whole.length <= COMMAND_TITLE_CHARS) return whole;
  const shortRaw = argv.map((a) => (a.startsWith('/') && a.length > 1 ? path.posix.basename(a) : a)).join(' ');
  const short = printable(shortRaw);
  if (short.length <= COMMAND_TITLE_CHARS) return short;
  // Cut between characters as shown, never inside an escape ("\u202e" cut to "\u202" would hide which one it was).
  const shown = Array.from(shortRaw, (c) => printable(c));
  const half = Math.floor((COMMAND_TITLE_CHARS - 1) / 2);
  const fit = (parts: string[]) => {
    let used = 0;
    return parts.filter((p) => (used += p.length) <= half);
  };
  return `${fit(shown).join('')}…${fit([...shown].reverse()).reverse().join('')}`;
}

/** A wizard's saved state holds its request, baseline and trials: far below this; a larger file is not read. */
const MAX_WIZARD_STATE_BYTES = 4 * MiB;

/**
 * The wizard an optimise run belongs to: the id the Optimise area lists it under (an engine wizard's job id, from
 * the run's config; a script wizard's run id) and, while the run is unfinished, how far its saved state got
 * (optimise/<job id>/state.json for the engine, the run's own state.json for a script, which writes it only
 * once its baseline is measured).
 */
async function wizardOf(workspace: Workspace, id: string, run: RunRecordJson, script: boolean): Promise<RunWizard | undefined> {
  if (run.kind !== 'optimise') return undefined;
  const config = run.config as { jobId?: unknown; request?: { maxTrials?: unknown } };
  const jobId = typeof config.jobId === 'string' && ID_PATTERN.test(config.jobId) ? config.jobId : null;
  const wizardId = script ? id : jobId;
  if (!wizardId) return undefined;
  const maxTrials = Number.isInteger(config.request?.maxTrials) ? (config.request!.maxTrials as number) : null;
  const wizard: RunWizard = { id: wizardId, baselineDone: null, trialsDone: null, maxTrials };
  if (run.status !== 'running') return wizard;
  const file = script ? path.join('runs', id, 'state.json') : path.join('optimise', wizardId, 'state.json');
  try {
    const state = JSON.parse(await readTextCapped(workspace, file, MAX_WIZARD_STATE_BYTES)) as { baseline?: unknown; trials?: unknown };
    return { ...wizard, baselineDone: state.baseline != null, trialsDone: Array.isArray(state.trials) ? state.trials.length : 0 };
  } catch (err) {
    // A script wizard has no state before its baseline; a state that cannot be read leaves the progress unknown.
    return script && isMissing(err) ? { ...wizard, baselineDone: false, trialsDone: 0 } : wizard;
  }
}

/** An engine optimisation's model and data, in the Optimise area's words; null when its config holds no engine target. */
function optimiseTitleOf(run: RunRecordJson): string | null {
  const target = (run.config as { request?: { target?: { spec?: { family?: unknown }; data?: unknown; readFrom?: unknown } } }).request?.target;
  const data = DataSourceSchema.safeParse(target?.data);
  if (typeof target?.spec?.family !== 'string' || !data.success) return null;
  return optimiseTargetTitle({ spec: target.spec as { family: string } & Record<string, unknown>, data: data.data, readFrom: target.readFrom === 'source' ? 'source' : 'cache' });
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
      : `${run.config.spec ? modelWords(run.config.spec as Record<string, unknown>) : 'model'} on ${run.config.cachedData?.description ?? (typeof asked === 'string' ? asked : 'data')}`;
  const titles: Record<string, string> = {
    train: modelOnData,
    benchmark: `training benchmark: ${modelOnData}`,
    'batch-search': `batch-size search: ${modelOnData}`,
    // An optimisation's config holds its request: named from its target as the Optimise area names it (the data asked for).
    optimise: `optimisation: ${command === null ? (optimiseTitleOf(run) ?? modelOnData) : modelOnData}`,
    // By the dataset's name, as the Datasets area lists it, not its cache id (name-hash).
    'loader-benchmark': `loader benchmark of ${loaderDatasetName(run.result?.dataset ?? run.config.dataset)}`,
  };
  // Every word of the title and messages below comes from run.json: control characters are escaped here, once for the CLI, the UI and reports.
  const title = printable(cut(titles[run.kind] ?? run.kind, MAX_TITLE_CHARS));
  const interruptedBecause = interruptionOf(run);
  const interruption = interruptedBecause === null ? null : printable(cut(interruptedBecause, MAX_MESSAGE_CHARS));
  const unfinished = run.status === 'running';
  const { annotation, problem: annotationProblem } = await readRunAnnotation(workspace, id);
  const wizard = await wizardOf(workspace, id, run, target?.kind === 'script');
  return {
    id,
    kind: run.kind,
    status: interruption ? 'interrupted' : run.status,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt ?? null,
    title,
    testAccuracy: run.result?.target?.test?.accuracy ?? run.result?.test?.accuracy ?? null,
    samplesPerSec: run.result?.samplesPerSec ?? headlineRate(run),
    gpuUtilizationMean: run.result?.telemetry?.gpuUtilizationMean ?? null,
    error: run.error ? printable(cut(`${run.error.code}: ${run.error.message}`, MAX_MESSAGE_CHARS), { lines: true }) : null,
    lastStep: unfinished ? await lastStepOf(workspace, path.join('runs', id, 'events.jsonl')) : null,
    interruption,
    problem: null,
    target: target?.kind === 'script' ? 'script' : 'engine',
    ...(wizard ? { wizard } : {}),
    ...(annotation ? { annotation } : {}),
    ...(annotationProblem ? { annotationProblem } : {}),
    ...(run.status === 'cancelled' && run.result != null ? { partialResult: true as const } : {}),
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

/** Every run, newest first; an unreadable run (or a link, file or special file in runs/) is listed with its problem, never fatal. */
export async function listRuns(workspace: Workspace, budget = runReadBudget()): Promise<RunSummary[]> {
  const entries = (await listFolder(workspace, 'runs').catch(() => [])).filter((e) => !e.name.startsWith('.')).reverse();
  const one = async (entry: FolderEntry): Promise<RunSummary> => {
    // A folder no run id names (a copied or planted one, control characters and all): listed as what it is, escaped.
    if (!ID_PATTERN.test(entry.name)) return unreadable(printable(entry.name), 'its folder name is not a run id (letters, digits, ".", "_" and "-"), so nothing can open it');
    const notFolder = entryProblem(entry, 'dir');
    if (notFolder) return unreadable(entry.name, notFolder);
    const { record, problem } = await readRun(workspace, entry.name, budget);
    return record ? summarize(workspace, entry.name, record) : unreadable(entry.name, problem);
  };
  // Far from the budget's end, a few runs at once cannot pass it (each run.json is at most MAX_RUN_JSON_BYTES); near
  // it, one at a time in order, so the newest runs are the ones read, as the budget says.
  return mapAtOnce(entries, () => (budget.bytesLeft > LIST_READS_AT_ONCE * MAX_RUN_JSON_BYTES ? LIST_READS_AT_ONCE : 1), one);
}

/** runs.get's answer, with `cut` when an events or telemetry file was too large to read whole (what was left out, in words). */
export type RunDetailRead = RunDetail & { cut?: FileCut[] };

/**
 * One run with its events; step events are thinned evenly so a long run still charts quickly. Its events
 * and telemetry are read in bounded windows (at most MAX_EVENTS_READ_BYTES and MAX_TELEMETRY_READ_BYTES),
 * so the answer costs bounded time however large a file in the run's folder is.
 */
export async function readRunDetail(workspace: Workspace, id: string): Promise<RunDetailRead> {
  const record = await requireRun(workspace, id);
  const events = await readThinnedEvents(workspace, path.join('runs', id, 'events.jsonl'));
  const telemetry = await readRunTelemetryCut(workspace, id);
  const cut = [events.cut, ...telemetry.cut].filter((c): c is FileCut => c !== null);
  return { summary: await summarize(workspace, id, record), record, events: events.events, telemetry: telemetry.samples, ...(cut.length ? { cut } : {}) };
}

/** A step event's line, as JSON.stringify writes it (or with spaces). */
const STEP_LINE = /"type"\s*:\s*"step"/;

/** Lines longer than this are not events the engine wrote (a step event is ~400 bytes): skipped unparsed. */
const MAX_EVENT_LINE_BYTES = 64 * 1024;

/**
 * events.jsonl streamed, never held whole, and at most MAX_EVENTS_READ_BYTES of it
 * (a larger file in pieces spread over it: `cut` says so): step events are thinned as they
 * arrive (every stride-th line kept, the stride doubling whenever more than twice
 * MAX_STEP_EVENTS lines were sampled at it), so memory stays bounded however long the run was
 * and the event loop keeps serving while a large file is read. A line is parsed only where
 * it is sampled (its kind read from its text first), so a file of millions of tiny lines
 * costs no more than a long run's. Epoch events are all kept, in file order; the last step
 * is always kept. A link or special file in its place reads as no events.
 */
async function readThinnedEvents(workspace: Workspace, file: string): Promise<{ events: TrainEvent[]; cut: FileCut | null }> {
  // Steps and the other events (epochs) are each thinned the same way: a tampered file of
  // millions of epoch lines costs no more than a long run's steps.
  type Kind = 'step' | 'other';
  let held: { at: number; kind: Kind; e: TrainEvent }[] = [];
  const stride = { step: 1, other: 1 };
  const seen = { step: 0, other: 0 };
  const parse = (line: string): TrainEvent | null => {
    try {
      const parsed = TrainEventSchema.safeParse(JSON.parse(line));
      return parsed.success ? parsed.data : null;
    } catch {
      return null; // a line cut off by a crash: the rest still counts
    }
  };
  // The last two step lines: the very last may be cut off by a kill, then the one before it is the run's last step.
  let lastSteps: string[] = [];
  const take = (line: string) => {
    // A step's line says so in its text, read before any parsing (a mislabelled line is thinned with the other kind).
    const kind: Kind = STEP_LINE.test(line) ? 'step' : 'other';
    if (kind === 'step') lastSteps = [lastSteps.at(-1) ?? '', line];
    const at = seen[kind]++;
    if (at % stride[kind] !== 0) return;
    const e = parse(line);
    if (e !== null) held.push({ at, kind, e });
    if (at / stride[kind] >= 2 * MAX_STEP_EVENTS) {
      const s = (stride[kind] *= 2);
      held = held.filter((h) => h.kind !== kind || h.at % s === 0);
    }
  };
  let cut: FileCut | null = null;
  try {
    const read = await jsonlLinesBounded(workspace, file, MAX_EVENT_LINE_BYTES, MAX_EVENTS_READ_BYTES);
    cut = read.cut;
    for await (const batch of read.batches) for (const line of batch) take(line);
  } catch {
    // no events.jsonl (a run that never stepped), one that went away, or not a file: what was read counts
  }
  const heldSteps = held.filter((h) => h.e.type === 'step').length;
  if (heldSteps > MAX_STEP_EVENTS) {
    // The held steps are evenly spaced: one last even pass brings them to the limit.
    const k = Math.ceil(heldSteps / MAX_STEP_EVENTS);
    let nth = 0;
    held = held.filter((h) => h.e.type !== 'step' || nth++ % k === 0);
  }
  const events = held.map((h) => h.e);
  const heldAt = new Set(held.filter((h) => h.kind === 'step').map((h) => h.at));
  let lastParsed: TrainEvent | null = null;
  for (let back = 1; back <= lastSteps.length && lastParsed === null; back++) {
    if (heldAt.has(seen.step - back)) break; // held already, in its place
    const e = parse(lastSteps[lastSteps.length - back]);
    if (e?.type === 'step') lastParsed = e;
  }
  if (lastParsed !== null) {
    // After the last held step, before any epoch event that followed it in the file.
    let at = events.length;
    while (at > 0 && events[at - 1].type !== 'step') at--;
    events.splice(at, 0, lastParsed);
  }
  return { events, cut };
}

/** The dataset a loader benchmark measured, by name: its request may name it by id, and its result always does. */
function loaderDatasetName(dataset: unknown): string {
  return typeof dataset === 'string' && dataset ? datasetNameOfId(dataset) : 'a dataset';
}
