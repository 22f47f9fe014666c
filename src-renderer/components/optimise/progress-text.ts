import type { BuildProgress } from '@api/datasets';
import type { OptimiseProgress } from '@api/optimise';
import { changeLabelWords } from '../../view-models/setting-words';

/** Seconds as m:ss; '–' before anything was measured. */
export function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '–';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** What the wizard is doing, in words, and how far the current phase is (0..1). */
export function progressText(p: OptimiseProgress): { text: string; fraction: number } {
  const fraction = p.repetitions > 0 ? p.repetition / p.repetitions : 0;
  if (p.finishedTrial) return { text: `trial ${p.finishedTrial.index} (${changeLabelWords(p.finishedTrial.change.label)}) finished: ${p.finishedTrial.decision}`, fraction: 1 };
  switch (p.phase) {
    case 'preparing':
      return { text: 'preparing the data', fraction: 0 };
    case 'baseline':
      // Said before the first repetition, which also starts the engine: often the longest wait of all.
      if (p.repetition === 0) return { text: `baseline: measuring repetition 1 of ${p.repetitions} (the first also starts the engine and runs its warm-up steps)`, fraction };
      return { text: `baseline: repetition ${p.repetition} of ${p.repetitions} done`, fraction };
    case 'limits':
      return { text: 'measuring the physical limits (GEMM rate, read rate)', fraction: 0 };
    case 'batch-search':
      return { text: 'searching the batch size for the batch-size candidate (a run of kind batch-search)', fraction: 0 };
    case 'trial':
      return { text: `trial ${p.trial ?? '?'} (at most ${p.maxTrials}): ${changeLabelWords(p.label ?? '')}, ${p.repetition === 0 ? 'measuring pair 1' : `pair ${p.repetition}`} of ${p.repetitions}${p.repetition === 0 ? '' : ' done'}`, fraction };
    case 'final':
      return { text: `final configuration vs baseline: ${p.repetition === 0 ? 'measuring pair 1' : `pair ${p.repetition}`} of ${p.repetitions}${p.repetition === 0 ? '' : ' done'}`, fraction };
    case 'done':
      return { text: 'done', fraction: 1 };
  }
}

/**
 * Where an optimisation stands, short enough for a line of the Runs list: "baseline, repetition 2 of 5",
 * "trial 1 of at most 3: batch size 256 -> 512", "final comparison, pair 1 of 5" (issue 41 item 4).
 */
export function progressShort(p: OptimiseProgress): string {
  const of = (what: string) => `${what} ${Math.min(p.repetition + 1, p.repetitions)} of ${p.repetitions}`;
  if (p.finishedTrial) return `trial ${p.finishedTrial.index} of at most ${p.maxTrials} finished: ${p.finishedTrial.decision}`;
  switch (p.phase) {
    case 'preparing':
      return 'preparing the data';
    case 'baseline':
      return p.repetition >= p.repetitions ? 'baseline measured' : `baseline, ${of('repetition')}`;
    case 'limits':
      return 'baseline measured; measuring the limits';
    case 'batch-search':
      return 'baseline measured; searching the batch size';
    case 'trial':
      return `trial ${p.trial ?? '?'} of at most ${p.maxTrials}${p.label ? `: ${changeLabelWords(p.label)}` : ''}, ${of('pair')}`;
    case 'final':
      return `final comparison with the baseline, ${of('pair')}`;
    case 'done':
      return 'finishing';
  }
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');

/**
 * The data being made ready before the baseline (the built-in example's positions generated, then every dataset cached), in
 * words, with how far it is (0..1; null when not measurable) and its own ETA in seconds (null when not known).
 */
export function dataPreparationText(p: BuildProgress): { text: string; fraction: number | null; etaSeconds: number | null } {
  const byRecords = p.recordsTotal > 0 ? Math.min(1, p.records / p.recordsTotal) : null;
  const byBytes = p.bytesTotal > 0 ? Math.min(1, p.bytesWritten / p.bytesTotal) : null;
  switch (p.phase) {
    case 'generating':
      return { text: `preparing the data: making the example's ${n0(p.recordsTotal)} board positions, ${n0(p.records)} done`, fraction: byRecords ?? byBytes, etaSeconds: p.etaSeconds };
    case 'reading':
      return { text: `preparing the data: caching ${n0(p.recordsTotal)} records, ${n0(p.records)} read`, fraction: byRecords ?? byBytes, etaSeconds: p.etaSeconds };
    case 'checksumming':
      return { text: 'preparing the data: checking the cache (checksums)', fraction: byBytes, etaSeconds: p.etaSeconds };
    case 'publishing':
      return { text: 'preparing the data: saving the cache', fraction: null, etaSeconds: null };
    case 'done':
      return { text: 'the data is ready: loading it and starting the engine', fraction: 1, etaSeconds: null };
  }
}
