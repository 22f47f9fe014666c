// A run's measured steps as a Chrome trace-event file (Perfetto, chrome://tracing):
// one process per repetition, one track per phase, one slice per step.
import path from 'node:path';

import { PHASE_NAMES } from '../../api/benchmark';
import type { EngineBenchmarkResult } from '../../api/benchmark-result';
import { BenchmarkResultSchema, isEngineBenchmark } from '../../api/benchmark-result';
import { ApiError } from '../../api/errors';
import type { RunRecordJson } from '../../api/run-record';
import type { RunTraceResult, TraceEvent, TraceFile } from '../../api/reports';
import type { TrainStepEvent } from '../../api/training';
import { TrainStepEventSchema } from '../../api/training';
import { isEngineTrainRun, TrainRunResultSchema } from '../../api/train-result';
import { type FileCut, jsonlLinesBounded } from '../workspace/jsonl-lines';
import { readRunDetail } from '../workspace/run-reader';
import type { Workspace } from '../workspace/workspace';
import { writeJsonConfined } from '../workspace/workspace-files';

/** Above this many measured steps, one slice per event window instead of per step (a trace viewer slows past ~1M events). */
export const MAX_TRACED_STEPS = 20_000;

const STEP_TID = 1;
const PHASE_TIDS = Object.fromEntries([...PHASE_NAMES, 'other'].map((p, i) => [p, i + 2])) as Record<string, number>;
const OP_TID_BASE = 100;

interface Window {
  /** Measured steps this event covers (those after the warm-up). */
  steps: number;
  phasesMs: TrainStepEvent['phasesMs'];
  /** The window's wall time per step, from its samples/s. */
  wallMs: number;
}

/** A repetition: its measured windows, and the steady-state total the engine timed over them. */
interface Repetition {
  index: number;
  windows: Window[];
  measuredMs: number;
}

/** Most windows kept per repetition: beyond it neighbours are merged, so a long run's trace stays openable. */
export const MAX_WINDOWS = 5_000;

/**
 * The measured part of each step event (the steps after the warm-up it covers), built
 * as events stream in: neighbouring windows are merged (step-weighted means) whenever
 * more than twice MAX_WINDOWS are held, so memory stays bounded however long the run.
 */
export class WindowBuilder {
  readonly windows: Window[] = [];
  private previous = 0;

  constructor(
    private readonly warmup: number,
    private readonly samplesPerStep: number,
  ) {}

  add(e: Pick<TrainStepEvent, 'globalStep' | 'samplesPerSec' | 'phasesMs'>): void {
    const steps = e.globalStep - Math.max(this.previous, this.warmup);
    if (steps > 0 && e.samplesPerSec > 0) this.windows.push({ steps, phasesMs: e.phasesMs, wallMs: (1000 * this.samplesPerStep) / e.samplesPerSec });
    this.previous = Math.max(this.previous, e.globalStep);
    if (this.windows.length > 2 * MAX_WINDOWS) this.halve();
  }

  private halve(): void {
    const merged: Window[] = [];
    for (let i = 0; i < this.windows.length; i += 2) {
      const a = this.windows[i];
      const b = this.windows[i + 1];
      if (!b) {
        merged.push(a);
        continue;
      }
      const n = a.steps + b.steps;
      const mean = (x: number, y: number) => (x * a.steps + y * b.steps) / n;
      const phasesMs = Object.fromEntries(PHASE_NAMES.map((p) => [p, mean(a.phasesMs[p] ?? 0, b.phasesMs[p] ?? 0)])) as TrainStepEvent['phasesMs'];
      merged.push({ steps: n, phasesMs, wallMs: mean(a.wallMs, b.wallMs) });
    }
    this.windows.splice(0, this.windows.length, ...merged);
  }
}

/** Lines longer than this are not events the engine wrote (a step event is ~400 bytes): skipped unparsed. */
const MAX_EVENT_LINE_BYTES = 64 * 1024;

/** At most this much of events.jsonl is read for a trace; a larger (huge or planted) file is read in spread windows. */
const MAX_EVENTS_READ_BYTES = 64 * 1024 * 1024;

/**
 * Calls `take` with each JSON line of events.jsonl, streamed; a line cut off by a kill is skipped. A file over
 * MAX_EVENTS_READ_BYTES is read in evenly spread windows (jsonlLinesBounded), so a trace costs bounded time; what
 * was left out is returned (null: read whole), for the trace to say so.
 */
async function forEachEvent(workspace: Workspace, file: string, take: (event: unknown) => void): Promise<FileCut | null> {
  try {
    const { batches, cut } = await jsonlLinesBounded(workspace, file, MAX_EVENT_LINE_BYTES, MAX_EVENTS_READ_BYTES);
    for await (const batch of batches) {
      for (const text of batch) {
        if (!text.includes('"type"')) continue; // not an event: millions of planted tiny lines cost no parse
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          continue;
        }
        take(parsed);
      }
    }
    return cut;
  } catch (err) {
    throw new ApiError('E_DATA', `cannot read the step events ${file}: ${(err as Error).message}`);
  }
}

async function benchmarkRepetitions(workspace: Workspace, result: EngineBenchmarkResult, file: string): Promise<{ reps: Repetition[]; cut: FileCut | null }> {
  const perStep = result.batchSize * result.target.accumulation;
  const builders = new Map(result.repetitions.map((rep) => [rep.repetition, new WindowBuilder(result.warmupSteps, perStep)]));
  const cut = await forEachEvent(workspace, file, (line) => {
    const l = line as { type?: string; repetition?: number; event?: unknown };
    if (l.type !== 'benchmark.step' || l.repetition === undefined) return;
    const step = TrainStepEventSchema.safeParse(l.event);
    if (step.success) builders.get(l.repetition)?.add(step.data);
  });
  return { reps: result.repetitions.map((rep) => ({ index: rep.repetition, windows: builders.get(rep.repetition)?.windows ?? [], measuredMs: rep.steadyStateMeanMs * result.steps })), cut };
}

function phaseSum(p: TrainStepEvent['phasesMs']): number {
  return PHASE_NAMES.reduce((s, n) => s + (p[n] ?? 0), 0);
}

/**
 * The trace: per repetition, its measured steps one after another. The named phases
 * are each window's means, laid end to end in step order; `other` is the rest of the
 * engine's steady-state total (steadyStateMeanMs x steps) spread over the steps in
 * proportion to how far each window's wall time (from its samples/s) exceeds its
 * named phases, so every repetition's steps add up to the engine's own total. Where
 * the named phases alone exceed that total (their timers overlap), they are drawn
 * scaled down to it, and the metadata says by how much.
 */
export function buildTrace(runId: string, kind: string, reps: readonly Repetition[], ops: { op: string; share: number }[] | null): TraceFile {
  const events: TraceEvent[] = [];
  const us = (ms: number) => Math.round(ms * 1000 * 1000) / 1000;
  const totalSteps = reps.reduce((s, r) => s + r.windows.reduce((a, w) => a + w.steps, 0), 0);
  const perWindow = totalSteps > MAX_TRACED_STEPS;
  const namedOverrunMs: number[] = [];
  const phaseScales: number[] = [];
  for (const rep of reps) {
    const pid = rep.index;
    events.push({ name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name: `repetition ${rep.index}` } });
    events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid: STEP_TID, args: { name: 'step' } });
    for (const [phase, tid] of Object.entries(PHASE_TIDS)) events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name: phase } });
    ops?.forEach((o, i) => events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid: OP_TID_BASE + i, args: { name: `op ${o.op}` } }));
    const named = rep.windows.reduce((s, w) => s + phaseSum(w.phasesMs) * w.steps, 0);
    const otherTotal = rep.measuredMs - named;
    namedOverrunMs.push(Math.max(0, -otherTotal));
    // Where the phase timers add up to more than the step clock (they overlap), the phases are
    // drawn scaled down to fit it, so the slices always add up to what the engine measured.
    const fit = named > rep.measuredMs && named > 0 ? rep.measuredMs / named : 1;
    phaseScales.push(fit);
    const slack = rep.windows.map((w) => Math.max(0, w.wallMs - phaseSum(w.phasesMs)));
    const slackTotal = rep.windows.reduce((s, w, i) => s + slack[i] * w.steps, 0);
    let t = 0;
    let step = 0;
    rep.windows.forEach((w, wi) => {
      const count = perWindow ? 1 : w.steps;
      const factor = (perWindow ? w.steps : 1) * fit;
      const share = slackTotal > 0 ? slack[wi] / slackTotal : 1 / totalStepsOf(rep);
      const otherMs = Math.max(0, otherTotal) * share * (perWindow ? w.steps : 1);
      const namedMs = phaseSum(w.phasesMs) * factor;
      for (let i = 0; i < count; i++) {
        step += perWindow ? w.steps : 1;
        const stepMs = namedMs + otherMs;
        events.push({ name: perWindow ? `steps to ${step}` : `step ${step}`, cat: 'step', ph: 'X', ts: us(t), dur: us(stepMs), pid, tid: STEP_TID });
        let at = t;
        for (const phase of PHASE_NAMES) {
          const d = (w.phasesMs[phase] ?? 0) * factor;
          events.push({ name: phase, cat: 'phase', ph: 'X', ts: us(at), dur: us(d), pid, tid: PHASE_TIDS[phase] });
          at += d;
        }
        events.push({ name: 'other', cat: 'phase', ph: 'X', ts: us(at), dur: us(otherMs), pid, tid: PHASE_TIDS.other });
        if (ops) {
          // Op shares are of the profiled GPU time (forward, loss and backward), drawn over those phases.
          const computeMs = (w.phasesMs.forward + w.phasesMs.loss + w.phasesMs.backward) * factor;
          let opAt = t + (w.phasesMs.data + w.phasesMs.h2d) * factor;
          ops.forEach((o, k) => {
            events.push({ name: o.op, cat: 'op', ph: 'X', ts: us(opAt), dur: us(o.share * computeMs), pid, tid: OP_TID_BASE + k });
            opAt += o.share * computeMs;
          });
        }
        t += stepMs;
      }
    });
  }
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    metadata: {
      runId,
      kind,
      tracks: 'one process per repetition; tracks: step, then one per phase (data, h2d, forward, loss, backward, optimizer, other)' + (ops ? ', then one per op kind' : ''),
      granularity: perWindow ? `one slice per event window (more than ${MAX_TRACED_STEPS} measured steps)` : 'one slice per measured step',
      timing:
        "the engine reports phases as means over windows of steps, so every step of a window shows the window's means; 'other' is the engine's steady-state total (steadyStateMeanMs x steps) less the named phases, spread over the steps by how far each window's wall time exceeds its named phases",
      measuredMs: reps.map((r) => r.measuredMs),
      /** Per repetition: how far the named phases exceed the measured total (their timers overlap); 0 when they fit. */
      namedOverrunMs,
      /** Per repetition: the factor the phases were drawn at (below 1 only where namedOverrunMs is not 0). */
      phaseScales,
      ...(ops ? { ops: "op slices: each op kind's share of the profiled GPU time (CUDA measurement mode), drawn over the forward, loss and backward phases" } : {}),
    },
  };
}

function totalStepsOf(rep: Repetition): number {
  return Math.max(1, rep.windows.reduce((s, w) => s + w.steps, 0));
}

/** Builds the trace of a completed benchmark (or train) run and writes it to runs/<id>/trace.json. */
export async function traceRun(workspace: Workspace, runId: string): Promise<RunTraceResult> {
  const detail = await readRunDetail(workspace, runId);
  const record = detail.record as RunRecordJson;
  if (record.status !== 'completed') throw new ApiError('E_BAD_INPUT', `run ${runId} is ${detail.summary.status}: only a completed run has measured steps to trace`);
  const dir = path.posix.join('runs', runId);
  const events = path.join(dir, 'events.jsonl');
  let reps: Repetition[];
  let ops: { op: string; share: number }[] | null = null;
  let cut: FileCut | null;
  if (record.kind === 'benchmark') {
    const parsed = BenchmarkResultSchema.safeParse(record.result);
    if (!parsed.success) throw new ApiError('E_DATA', `run ${runId}: its benchmark result does not read (${parsed.error.issues[0]?.message})`);
    if (!isEngineBenchmark(parsed.data)) throw new ApiError('E_BAD_INPUT', `run ${runId} benchmarks a script: traces are made of the engine's step events, which a script's probe does not record`);
    ({ reps, cut } = await benchmarkRepetitions(workspace, parsed.data, events));
  } else if (record.kind === 'train') {
    const parsed = TrainRunResultSchema.safeParse(record.result);
    if (!parsed.success) throw new ApiError('E_DATA', `run ${runId}: its training result does not read (${parsed.error.issues[0]?.message})`);
    if (!isEngineTrainRun(parsed.data)) throw new ApiError('E_BAD_INPUT', `run ${runId} trains a script: traces are made of the engine's step events, which a script's probe does not record`);
    const r = parsed.data;
    const options = (record.config as { options?: { batchSize?: number; accumulation?: number } }).options;
    const builder = new WindowBuilder(r.stepTime.warmupSteps, (options?.batchSize ?? 1) * (options?.accumulation ?? 1));
    cut = await forEachEvent(workspace, events, (line) => {
      const step = TrainStepEventSchema.safeParse(line);
      if (step.success) builder.add(step.data);
    });
    const windows = builder.windows;
    const measured = windows.reduce((s, w) => s + w.steps, 0);
    reps = [{ index: 1, windows, measuredMs: r.stepTime.steadyStateMeanMs === null ? windows.reduce((s, w) => s + w.wallMs * w.steps, 0) : r.stepTime.steadyStateMeanMs * measured }];
    const shares = (r.target.backend as { opShares?: unknown } | undefined)?.opShares;
    if (Array.isArray(shares) && shares.length) ops = shares.filter((o): o is { op: string; share: number } => typeof o?.op === 'string' && typeof o?.share === 'number');
  } else {
    throw new ApiError('E_BAD_INPUT', `run ${runId} is a ${record.kind} run; traces are made of benchmark and train runs, which time their steps`);
  }
  if (reps.every((r) => r.windows.length === 0)) throw new ApiError('E_DATA', `run ${runId} recorded no step events after its warm-up, so there is nothing to trace`);
  const built = buildTrace(runId, record.kind, reps, ops);
  // A trace of an events file too large to read whole is drawn from pieces of it: it says so, with what was read.
  const trace = cut ? { ...built, metadata: { ...built.metadata, sampled: cut.note } } : built;
  const file = path.posix.join(dir, 'trace.json');
  await writeJsonConfined(workspace, file, trace);
  return { runId, path: file, trace };
}
