import type { TrainStepEvent } from '../../../api/training';

/** A trial's samples/s, or null with the reason when no step after the cold first one was timed. */
export interface TrialThroughput {
  samplesPerSec: number | null;
  /** Why samplesPerSec is null (shown with the trial); null when it was measured. */
  unmeasured: string | null;
}

/**
 * Samples/s of a short trial, leaving out the first event's window: the first step
 * allocates every buffer and would make small trials look slow. Each step event
 * covers the steps since the previous one, so its samples over its rate is its time.
 * With no window after the first (every step fell in one event), the engine's steady
 * state (the trial runs with one warm-up step) is the rate; the run's overall rate,
 * first step included, never is: a trial of one step has no throughput.
 */
export function trialSamplesPerSec(events: TrainStepEvent[], samplesPerStep: number, steadyStateMeanMs: number | null): TrialThroughput {
  let samples = 0;
  let seconds = 0;
  for (let i = 1; i < events.length; i++) {
    const steps = events[i].globalStep - events[i - 1].globalStep;
    if (steps <= 0 || events[i].samplesPerSec <= 0) continue;
    samples += steps * samplesPerStep;
    seconds += (steps * samplesPerStep) / events[i].samplesPerSec;
  }
  if (seconds > 0) return { samplesPerSec: samples / seconds, unmeasured: null };
  if (steadyStateMeanMs !== null && steadyStateMeanMs > 0) return { samplesPerSec: (1000 * samplesPerStep) / steadyStateMeanMs, unmeasured: null };
  const trained = events.length ? events[events.length - 1].globalStep : 0;
  return {
    samplesPerSec: null,
    unmeasured: `no samples/s: the trial trained ${trained} step(s), so no step after the cold first one (which allocates every buffer) was timed`,
  };
}
