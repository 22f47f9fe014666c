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
      return { text: `baseline: repetition ${p.repetition} of ${p.repetitions} done`, fraction };
    case 'limits':
      return { text: 'measuring the physical limits (GEMM rate, read rate)', fraction: 0 };
    case 'batch-search':
      return { text: 'searching the batch size for the batch-size candidate (a run of kind batch-search)', fraction: 0 };
    case 'trial':
      return { text: `trial ${p.trial ?? '?'} (at most ${p.maxTrials}): ${p.label ?? ''}, pair ${p.repetition} of ${p.repetitions} done`, fraction };
    case 'final':
      return { text: `final configuration vs baseline: pair ${p.repetition} of ${p.repetitions} done`, fraction };
    case 'done':
      return { text: 'done', fraction: 1 };
  }
}
