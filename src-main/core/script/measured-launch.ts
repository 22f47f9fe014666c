import type { Writable } from 'node:stream';

import type { TelemetrySummary } from '../../api/telemetry';
import { handledLater } from '../common/handled-later';
import type { TelemetryService } from '../telemetry/telemetry-service';
import type { ProbeConnection } from './probe-channel';
import type { ProbeMessage } from './probe-messages';
import type { ProcessTreeSummary } from './process-tree';
import { sampleProcessTree } from './process-tree';
import type { TrialOptions, TrialRecord } from './script-trial';
import { runTrial } from './script-trial';

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
