import type { TrainStepEvent } from '../../api/training';

/**
 * Samples/s of a short trial, leaving out the first event's window: the first step
 * allocates every buffer and would make small trials look slow. Each step event
 * covers the steps since the previous one, so its samples over its rate is its time.
 */
export function trialSamplesPerSec(events: TrainStepEvent[], samplesPerStep: number, fallback: number): number {
  let samples = 0;
  let seconds = 0;
  for (let i = 1; i < events.length; i++) {
    const steps = events[i].globalStep - events[i - 1].globalStep;
    if (steps <= 0 || events[i].samplesPerSec <= 0) continue;
    samples += steps * samplesPerStep;
    seconds += (steps * samplesPerStep) / events[i].samplesPerSec;
  }
  return seconds > 0 ? samples / seconds : fallback;
}
