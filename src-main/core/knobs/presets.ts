import type { OptimiseChange, OptimisePreset } from '../../api/optimise';

/**
 * What each preset lets the wizard try, and how close the loss must stay:
 * - max-speed: everything; a numerics change (precision) may move the loss up to 4x the tolerance.
 * - balanced: everything, every change within the tolerance.
 * - reproducible: no numerics or recipe change at all, and a pipeline change must leave the loss as it was.
 */
export interface PresetRule {
  refuses(change: OptimiseChange): string | null;
  lossTolerance(change: OptimiseChange, tolerance: number): number;
}

/** A pipeline change under the reproducible preset must reproduce the loss to float64 rounding of the mean. */
const REPRODUCIBLE_TOLERANCE = 1e-9;

export const PRESETS: Record<OptimisePreset, PresetRule> = {
  'max-speed': {
    refuses: () => null,
    lossTolerance: (c, t) => (c.kind === 'numerics' ? 4 * t : t),
  },
  balanced: {
    refuses: () => null,
    lossTolerance: (_c, t) => t,
  },
  reproducible: {
    refuses: (c) =>
      c.kind === 'pipeline'
        ? null
        : `refused by the reproducible preset: ${c.label} ${c.kind === 'numerics' ? 'alters the numerics (the preset keeps fp32)' : 'changes the training recipe'}`,
    lossTolerance: () => REPRODUCIBLE_TOLERANCE,
  },
};
