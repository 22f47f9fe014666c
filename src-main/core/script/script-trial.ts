import type { ScriptOverrides, ScriptTarget } from '../../api/script-target';
import { ApiError } from '../../api/errors';
import type { LaunchOutcome } from './launcher';
import { launchScript } from './launcher';
import { LineTail } from './launcher';
import type { ProbeConnection } from './probe-channel';
import { openProbeChannel } from './probe-channel';
import type { ProbeMessage } from './probe-messages';

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
}

export interface TrialRecord {
  outcome: LaunchOutcome;
  /** Processes that reported (ranks), in connection order. */
  connections: ProbeConnection[];
  rejectedLines: number;
  stderrTail: string;
  stdoutTail: string;
  seconds: number;
}

/** One launch of the command with the probe: the raw reports, however it ended. */
export async function runTrial(o: TrialOptions): Promise<TrialRecord> {
  const channel = await openProbeChannel({ retainSteps: o.retainSteps });
  channel.onMessage = o.onMessage ?? null;
  const stdout = new LineTail(20);
  const stderr = new LineTail(20);
  const t0 = Date.now();
  const launch = launchScript({
    target: o.target,
    probeDir: o.probeDir,
    timeoutMs: o.timeoutMs,
    probeEnv: {
      TB_PROBE_ADDR: channel.address,
      TB_PROBE_TOKEN: channel.token,
      TB_PROBE_WARMUP: String(o.warmupSteps),
      TB_PROBE_STEPS: String(o.steps ?? 0),
      TB_PROBE_SET: JSON.stringify(o.overrides),
      ...(o.seed !== undefined ? { TB_PROBE_SEED: String(o.seed) } : {}),
      ...(o.measurePeak ? { TB_PROBE_PEAK: '1' } : {}),
    },
    onLine: (stream, line) => {
      (stream === 'stdout' ? stdout : stderr).add(line);
      o.onLine?.(stream, line);
    },
  });
  o.onStarted?.(launch.cancel, launch.pid);
  const outcome = await launch.outcome;
  await channel.close();
  return {
    outcome,
    connections: channel.connections,
    rejectedLines: channel.rejected,
    stderrTail: stderr.text(),
    stdoutTail: stdout.text(),
    seconds: (Date.now() - t0) / 1000,
  };
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
  if (out.cancelled) return new ApiError('E_CANCELLED', `the script was cancelled after ${lastSteps(r)} step(s); its process group was killed`);
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
    return new ApiError('E_SCRIPT', `the script ${how} after ${lastSteps(r)} optimizer step(s)${tail(r)}`);
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
          : 'the probe did not confirm it';
      return new ApiError('E_BAD_INPUT', `override ${key}=${JSON.stringify(o.overrides[key as keyof ScriptOverrides])} was not applied: ${why}`);
    }
  }
  return null;
}
