import type { ProbeMessage, ProbeStep } from './probe-messages';

type Phases = Extract<ProbeMessage, { type: 'phases' }>['phasesMs'];

const zeroPhases = (): Phases => ({ forward: 0, loss: 0, backward: 0, optimizer: 0 });
function addPhases(into: Phases, from: Phases): void {
  into.forward += from.forward;
  into.loss += from.loss;
  into.backward += from.backward;
  into.optimizer += from.optimizer;
}

/**
 * One rank's running sums over a whole training run, fed message by message, so
 * memory stays the same after a million steps (the channel keeps only the last
 * step). "Measured" is every step after the warm-up; the window is the steps
 * since the last progress point.
 */
export class RankTally {
  /** The latest optimizer step (the probe numbers them 1, 2, ...). */
  steps = 0;
  allMs = 0;
  /** How many steps had each batch size: an epoch's last batch is often smaller, so the run's batch is the commonest. */
  private readonly batchSizes = new Map<number, number>();
  timing: 'cuda-events' | 'host-clock' = 'host-clock';
  readonly measured = { n: 0, ms: 0, samples: 0, dataMs: 0, phasesMs: zeroPhases() };
  window = { ms: 0, samples: 0, dataMs: 0 };

  constructor(
    readonly rank: number,
    private readonly warmupSteps: number,
  ) {}

  get batchSize(): number | null {
    let best: [number, number] | null = null;
    for (const entry of this.batchSizes) if (!best || entry[1] > best[1]) best = entry;
    return best ? best[0] : null;
  }

  step(m: ProbeStep): void {
    this.steps = Math.max(this.steps, m.step);
    this.allMs += m.durMs;
    if (m.batches > 0) {
      const size = Math.round(m.samples / m.batches);
      this.batchSizes.set(size, (this.batchSizes.get(size) ?? 0) + 1);
    }
    if (m.timing === 'cuda-events') this.timing = 'cuda-events';
    this.window.ms += m.durMs;
    this.window.samples += m.samples;
    this.window.dataMs += m.dataMs;
    if (m.step <= this.warmupSteps) return;
    const s = this.measured;
    s.n++;
    s.ms += m.durMs;
    s.samples += m.samples;
    s.dataMs += m.dataMs;
    addPhases(s.phasesMs, m.phasesMs); // zeros when CUDA events time the step: those come in a later 'phases' message
  }

  /** CUDA-event phase times, read back after the GPU finished the step. */
  phases(m: Extract<ProbeMessage, { type: 'phases' }>): void {
    this.timing = 'cuda-events';
    if (m.step > this.warmupSteps) addPhases(this.measured.phasesMs, m.phasesMs);
  }

  /** The window's rate and data-wait share, then a fresh window. */
  takeWindow(): { samplesPerSec: number | null; dataWaitPercent: number | null } {
    const w = this.window;
    this.window = { ms: 0, samples: 0, dataMs: 0 };
    if (w.ms <= 0) return { samplesPerSec: null, dataWaitPercent: null };
    return { samplesPerSec: w.samples > 0 ? (1000 * w.samples) / w.ms : null, dataWaitPercent: (100 * w.dataMs) / w.ms };
  }
}

/** Training losses of rank 0 since the last progress point, and the last finite one. */
export class LossTally {
  private sum = 0;
  private count = 0;
  private step: number | null = null;
  last: { step: number; value: number } | null = null;
  /** Why the probe stopped reading losses, when it did. */
  off: string | null = null;

  add(steps: readonly number[], values: readonly (number | null)[]): void {
    steps.forEach((step, i) => {
      const v = values[i];
      this.step = step;
      if (v === null || v === undefined || !Number.isFinite(v)) return;
      this.sum += v;
      this.count++;
      this.last = { step, value: v };
    });
  }

  pending(): boolean {
    return this.count > 0;
  }

  take(): { loss: number | null; lossStep: number | null } {
    const out = { loss: this.count > 0 ? this.sum / this.count : null, lossStep: this.count > 0 ? this.step : null };
    this.sum = 0;
    this.count = 0;
    return out;
  }
}
