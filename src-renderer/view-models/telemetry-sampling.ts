import type { TelemetrySample } from '@api/telemetry';

/** One period the shown history was sampled at, and how much of the range it covers. */
export interface SamplingPart {
  /** The spacing of the kept samples: the sampler's period, or the history's half-second floor under a faster lease. */
  periodMs: number;
  seconds: number;
  background: boolean;
}

export interface SamplingSummary {
  parts: SamplingPart[];
  /** When the first sample in the range was taken, where the range reaches further back than the history. */
  startsAt: number | null;
}

/** A sample's spacing in the history: a faster lease's samples are thinned to about two a second there (HISTORY_MIN_GAP_MS). */
const spacing = (s: TelemetrySample): number | null => (s.periodMs === undefined ? null : Math.max(s.periodMs, 500));

/**
 * Which periods the history in [fromT, now] was sampled at (longest first), for the Dashboard's line
 * on it: the background lease while no window watched, a window's or a run's faster one meanwhile.
 * A stretch with no samples (the workbench not running) counts for no period.
 */
export function summarizeSampling(samples: readonly TelemetrySample[], fromT: number, backgroundIntervalMs: number | null): SamplingSummary {
  const byPeriod = new Map<number, number>();
  let first: TelemetrySample | null = null;
  for (let i = 1; i < samples.length; i++) {
    const s = samples[i];
    if (s.t < fromT) continue;
    const prev = samples[i - 1];
    first ??= prev.t >= fromT ? prev : s;
    const period = spacing(s);
    const gap = s.t - prev.t;
    if (period === null || gap > 3 * Math.max(period, spacing(prev) ?? 0)) continue;
    byPeriod.set(period, (byPeriod.get(period) ?? 0) + gap / 1000);
  }
  const all = [...byPeriod]
    .map(([periodMs, seconds]) => ({ periodMs, seconds, background: periodMs === backgroundIntervalMs }))
    .sort((a, b) => b.seconds - a.seconds);
  // A period that has just begun (under a second of it) is news for the next update, not a "for 0 s".
  const parts = all.filter((p, i) => i === 0 || p.seconds >= 1);
  // More than a minute short of the range's start: say where the history begins.
  const startsAt = first && first.t - fromT > 60_000 ? first.t : null;
  return { parts, startsAt };
}

const periodText = (ms: number) => `${ms >= 1000 ? (ms / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 }) : (ms / 1000).toFixed(1)} s`;
const durationText = (s: number) => (s >= 90 ? `${Math.round(s / 60)} min` : `${Math.round(s)} s`);
const clock = (t: number) => new Date(t).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });

/** The line under the Dashboard's range buttons: "Sampled every 2 s (in the background) for 12 min, every 0.5 s for 3 min". */
export function samplingText(summary: SamplingSummary): string {
  if (summary.parts.length === 0) return 'No history yet: samples arrive as they are taken.';
  const parts = summary.parts.map((p) => {
    const every = `every ${periodText(p.periodMs)}${p.background ? ' (in the background, while no window showed the Dashboard)' : ''}`;
    return summary.parts.length > 1 || summary.startsAt !== null ? `${every} for ${durationText(p.seconds)}` : every;
  });
  const head = `History sampled ${parts.join(', ')}`;
  return summary.startsAt !== null ? `${head}; the history starts at ${clock(summary.startsAt)}.` : `${head}.`;
}
