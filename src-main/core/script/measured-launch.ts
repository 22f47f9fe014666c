import type { Writable } from 'node:stream';

import { ApiError } from '../../api/errors';
import type { ScriptOverrides, ScriptTarget } from '../../api/script-target';
import type { TelemetrySummary } from '../../api/telemetry';
import { handledLater } from '../common/handled-later';
import type { TelemetryService } from '../telemetry/telemetry-service';
import type { LaunchOutcome } from './launcher';
import { launchScript, LineTail } from './launcher';
import type { ProbeConnection } from './probe-channel';
import { openProbeChannel } from './probe-channel';
import type { Followers } from '../nodes/followers';
import type { ProbeMessage } from './probe-messages';
import type { ProcessTreeSummary } from '../telemetry/process-group';
import { sampleProcessTree } from '../telemetry/process-group';

export interface TrialOptions {
  target: ScriptTarget;
  overrides: ScriptOverrides;
  warmupSteps: number;
  /** Measured steps before the probe stops the script; undefined: it runs to its own end. */
  steps: number | undefined;
  timeoutMs: number;
  probeDir: string;
  /** Seeds torch, random and numpy as torch is imported (the script's own seeding still wins): launches compared by their loss share it. */
  seed?: number;
  /** Asks the probe for torch's own matmul rate after the measured steps (a benchmark's utilisation). */
  measurePeak?: boolean;
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
  onMessage?: (connection: ProbeConnection, message: ProbeMessage) => void;
  /** Receives the cancel function and the process id (its process group's id too) as soon as it runs. */
  onStarted?: (cancel: () => void, pid: number | null) => void;
  /** See ProbeChannelOptions: a whole training run keeps only each rank's latest step. */
  retainSteps?: 'all' | 'last';
  /** Times DDP's all-reduces in every rank: once a step from DDP's own stamps, or each bucket through a Python hook (it costs small steps). */
  timeCollectives?: 'step' | 'bucket';
  /** A job across machines: where the collector listens, and the other nodes that start their part with each launch. */
  collector?: { host: string; port: number };
  followers?: Pick<Followers, 'launch' | 'stop'> & Partial<Pick<Followers, 'onPartFailed'>>;
}

export interface TrialRecord {
  outcome: LaunchOutcome;
  /** Processes that reported (ranks), in connection order. */
  connections: ProbeConnection[];
  rejectedLines: number;
  /** Senders the probe channel refused or cut (a wrong token, a flood, an oversized line), each named once. */
  channelProblems: string[];
  stderrTail: string;
  stdoutTail: string;
  seconds: number;
  /** Another node's part of this launch failed while it ran here ("node b's part of the job exited with code 134"). */
  otherNode: { failed: string; stoppedHere: boolean } | null;
}

/**
 * How long this node's part may go on after another node's part failed: its ranks usually fail by themselves within
 * it (a closed connection); torchrun's exit barrier would otherwise hold it for minutes, until the launch times out.
 */
const AFTER_OTHER_NODE_MS = 10_000;

/** One launch of the command with the probe: the raw reports, however it ended. */
async function runTrial(o: TrialOptions): Promise<TrialRecord> {
  const channel = await openProbeChannel({ retainSteps: o.retainSteps, ...(o.collector ?? {}) });
  // A listener's throw (a write into the run's folder refused: a link planted there) ends this launch with that
  // error. Thrown from the channel's or the process's I/O callbacks, it would end Trainbench's process instead.
  const failure: { failed: boolean; error: unknown; stop: (() => void) | null } = { failed: false, error: null, stop: null };
  const guarded =
    <A extends unknown[]>(listener: ((...args: A) => void) | undefined) =>
    (...args: A) => {
      if (failure.failed || !listener) return;
      try {
        listener(...args);
      } catch (err) {
        failure.failed = true;
        failure.error = err;
        failure.stop?.();
      }
    };
  channel.onMessage = guarded(o.onMessage);
  const onLine = guarded(o.onLine);
  const stdout = new LineTail(20);
  const stderr = new LineTail(20);
  const t0 = Date.now();
  const probeEnv = {
    TB_PROBE_ADDR: channel.address,
    TB_PROBE_TOKEN: channel.token,
    TB_PROBE_WARMUP: String(o.warmupSteps),
    TB_PROBE_STEPS: String(o.steps ?? 0),
    TB_PROBE_SET: JSON.stringify(o.overrides),
    ...(o.seed !== undefined ? { TB_PROBE_SEED: String(o.seed) } : {}),
    ...(o.measurePeak ? { TB_PROBE_PEAK: '1' } : {}),
    ...(o.timeCollectives ? { TB_PROBE_COLLECTIVES: o.timeCollectives } : {}),
  };
  // Before this node's part starts: the other nodes' ranks join the same collector, with the same settings.
  o.followers?.launch(probeEnv);
  const launch = launchScript({
    target: o.target,
    probeDir: o.probeDir,
    timeoutMs: o.timeoutMs,
    probeEnv,
    onLine: (stream, line) => {
      (stream === 'stdout' ? stdout : stderr).add(line);
      onLine(stream, line);
    },
  });
  failure.stop = launch.cancel;
  guarded(o.onStarted)(launch.cancel, launch.pid);
  let otherNode: TrialRecord['otherNode'] = null;
  let stopping: ReturnType<typeof setTimeout> | null = null;
  const offFailed = o.followers?.onPartFailed?.((failed) => {
    if (otherNode) return;
    const said = { failed, stoppedHere: false };
    otherNode = said;
    onLine('stderr', `trainbench: ${failed}; this node's part is stopped in ${AFTER_OTHER_NODE_MS / 1000} s unless it ends first (what every rank measured by then is kept)`);
    stopping = setTimeout(() => {
      said.stoppedHere = true;
      launch.cancel();
    }, AFTER_OTHER_NODE_MS);
  });
  let outcome: LaunchOutcome;
  try {
    outcome = await launch.outcome;
  } finally {
    if (stopping) clearTimeout(stopping);
    offFailed?.();
    o.followers?.stop(); // the other nodes end their part with this one's, however it ended
  }
  await channel.close();
  if (failure.failed) throw failure.error;
  return {
    outcome,
    connections: channel.connections,
    rejectedLines: channel.rejected,
    channelProblems: channel.problems,
    stderrTail: stderr.text(),
    stdoutTail: stdout.text(),
    seconds: (Date.now() - t0) / 1000,
    otherNode,
  };
}

/** Every rank of the job (its world size, as the ranks say it) reported and was stopped at the step limit by the probe. */
function measuredWhole(r: TrialRecord): boolean {
  const world = Math.max(0, ...r.connections.map((c) => c.hello.worldSize));
  const done = new Set(r.connections.filter((c) => c.messages.some((m) => m.type === 'done' && m.reason === 'steps')).map((c) => c.hello.rank));
  return world > 0 && done.size >= world;
}

const command = (t: ScriptTarget) => t.command.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ');
const lastSteps = (r: TrialRecord) => Math.max(0, ...r.connections.flatMap((c) => c.messages.filter((m) => m.type === 'step').map((m) => m.step)));

function tail(r: TrialRecord): string {
  const text = r.stderrTail || r.stdoutTail;
  return text ? `; its last lines:\n${text}` : '';
}

/** An out-of-memory report, if a rank sent one: a data point for the batch-size search, an error elsewhere. */
export function trialOom(r: TrialRecord): { batchSize: number | null; message: string } | null {
  for (const c of r.connections) for (const m of c.messages) if (m.type === 'oom') return { batchSize: m.batchSize, message: m.message };
  return null;
}

/**
 * The error a launch ended in, or null when it measured what was asked. The order
 * matters: a cancel or a timeout explains a non-zero exit, and the probe's own
 * words (an override it could not apply, an OOM) explain a crash better than the
 * exit code does.
 */
export function trialError(r: TrialRecord, o: Pick<TrialOptions, 'target' | 'overrides' | 'timeoutMs'>): ApiError | null {
  const out = r.outcome;
  if (out.startError) return new ApiError('E_BAD_INPUT', `${out.startError} (command: ${command(o.target)})`);
  // Stopped here after another node's part failed: a failure only if the measured steps are not all in (the job's
  // teardown, torchrun's exit barrier, failing on one node does not undo what every rank measured).
  const stoppedForOther = r.otherNode?.stoppedHere === true;
  if (stoppedForOther && !measuredWhole(r)) {
    return new ApiError('E_SCRIPT', `${r.otherNode!.failed}, after ${lastSteps(r)} optimizer step(s) here: the job cannot finish without it, so this node's part was stopped ${AFTER_OTHER_NODE_MS / 1000} s later${tail(r)}`);
  }
  if (out.cancelled && !stoppedForOther) return new ApiError('E_CANCELLED', `the script was cancelled after ${lastSteps(r)} step(s); its process group was killed`);
  if (out.timedOut) {
    return new ApiError(
      'E_TIMEOUT',
      `the script did not finish within ${Math.round(o.timeoutMs / 1000)} s (last optimizer step seen: ${lastSteps(r)}); it was killed with its process group${tail(r)}`,
    );
  }
  for (const c of r.connections) {
    for (const m of c.messages) if (m.type === 'error') return new ApiError(m.code === 'E_BAD_INPUT' ? 'E_BAD_INPUT' : 'E_INTERNAL', `rank ${c.hello.rank}: ${m.message}`);
  }
  const oom = trialOom(r);
  if (oom) return new ApiError('E_OOM', `the script ran out of memory at batch ${oom.batchSize ?? 'unknown'}: ${oom.message.split('\n')[0]}`);
  const stoppedByProbe = r.connections.length > 0 && r.connections.every((c) => c.messages.some((m) => m.type === 'done' && m.reason === 'steps'));
  if (!stoppedByProbe && out.exitCode !== 0) {
    const how = out.signal ? `was killed by ${out.signal}` : `exited with code ${out.exitCode}`;
    const first = r.otherNode ? ` (first, ${r.otherNode.failed})` : '';
    return new ApiError('E_SCRIPT', `the script ${how} after ${lastSteps(r)} optimizer step(s)${first}${tail(r)}`);
  }
  if (lastSteps(r) === 0) {
    return new ApiError(
      'E_SCRIPT',
      `the command ran no optimizer step that Trainbench's probe saw (command: ${command(o.target)}): it must run a PyTorch training loop in Python 3.9+ with torch; 'python -S' or '-I' skip the probe${tail(r)}`,
    );
  }
  // Never silent: every override asked for must have been applied somewhere.
  for (const key of Object.keys(o.overrides)) {
    const applied = r.connections.some((c) => c.messages.some((m) => m.type === 'applied' && m.key === key));
    if (!applied) {
      const why = key.startsWith('dataloader.')
        ? 'the script created no DataLoader'
        : key === 'copy.non_blocking'
          ? 'the script copied no pinned tensor to a CUDA device (pin_memory=True on its DataLoader pins the batches it yields)'
          : key.startsWith('ddp.')
            ? 'the script made no DistributedDataParallel model'
            : 'the probe did not confirm it';
      return new ApiError('E_BAD_INPUT', `override ${key}=${JSON.stringify(o.overrides[key as keyof ScriptOverrides])} was not applied: ${why}`);
    }
  }
  return null;
}

/** The telemetry period of a launch's measured window: it may last a second or two, as the engine's benchmark's. */
export const LAUNCH_TELEMETRY_MS = 200;

export interface MeasuredLaunchOptions extends Omit<TrialOptions, 'onStarted' | 'onMessage'> {
  /**
   * Records the machine over the measured window into this file (a run's stream, opened when the window opens); none:
   * no window. `whole`: the window is the whole launch, from its start to its exit (a training run's telemetry).
   */
  window: { telemetry: TelemetryService; open: () => Writable; periodMs?: number; whole?: boolean } | null;
  /** Samples the launch's process tree (ranks, loader workers) over the window: its CPU and memory. */
  processTree?: boolean;
  /** Receives the cancel function and the process (group) id as soon as it runs. */
  onStarted?: (cancel: () => void, pid: number | null) => void;
  onMessage?: (connection: ProbeConnection, message: ProbeMessage) => void;
}

/** A launch as every script capability reads it: the probe's reports, and the machine over its measured steps. */
export interface MeasuredLaunch {
  record: TrialRecord;
  /** The window's telemetry (with the conditions around the launch's process group); null without a window or before any measured step. */
  telemetry: TelemetrySummary | null;
  processTree: ProcessTreeSummary | null;
}

/**
 * One launch of the user's command with the probe, and its measured window (ADR 0037): it opens at the first measured
 * step (at the start with no warm-up) and closes at rank 0's last measured step, so the script's exit after them (its
 * finally blocks, a checkpoint saved, loader workers joined) and the probe's floors are not read as the launch's
 * conditions; a launch that runs to its own end (no `steps`, or one ending early) is cut back to its last measured
 * step. The benchmark, the wizard and every other script path measure through this one function.
 */
export async function launchMeasured(o: MeasuredLaunchOptions): Promise<MeasuredLaunch> {
  const { window, processTree, onStarted, onMessage, ...trial } = o;
  const whole = window?.whole === true;
  let pgid: number | null = null;
  let tree: ReturnType<typeof sampleProcessTree> = null;
  // Held in an object: the callbacks below change them, which narrowing across closures cannot see.
  const w: {
    recording: { stop(until?: number): Promise<TelemetrySummary> } | null;
    closed: { telemetry: Promise<TelemetrySummary> | null; tree: ProcessTreeSummary | null } | null;
  } = { recording: null, closed: null };
  // When rank 0's last measured step arrived: the window's end where it could only close with the launch.
  let lastMeasuredAt: number | undefined;
  const open = () => {
    if (w.closed) return;
    if (window) w.recording ??= window.telemetry.record(window.open(), window.periodMs ?? LAUNCH_TELEMETRY_MS, pgid === null ? undefined : { pgid });
    tree?.markWindowStart();
  };
  const close = (until?: number) => {
    if (w.closed) return;
    w.closed = { telemetry: w.recording ? handledLater(w.recording.stop(until)) : null, tree: tree?.stop(until) ?? null };
    w.recording = null;
    tree = null;
  };
  try {
    const record = await runTrial({
      ...trial,
      onStarted: (cancel, pid) => {
        pgid = pid;
        if (processTree && pid !== null) tree = sampleProcessTree(pid);
        if (trial.warmupSteps === 0 || whole) open();
        onStarted?.(cancel, pid);
      },
      onMessage: (connection, m) => {
        if (m.type === 'step' && m.step > trial.warmupSteps && !whole) {
          open();
          if (connection.hello.rank === 0) {
            lastMeasuredAt = Date.now();
            if (trial.steps !== undefined && m.step >= trial.warmupSteps + trial.steps) close();
          }
        }
        onMessage?.(connection, m);
      },
    });
    close(whole ? undefined : lastMeasuredAt);
    return { record, telemetry: (await w.closed?.telemetry) ?? null, processTree: w.closed?.tree ?? null };
  } finally {
    // A failed launch: its window's file is closed all the same.
    close();
    await w.closed?.telemetry?.catch(() => undefined);
  }
}
