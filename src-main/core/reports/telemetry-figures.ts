// A run's telemetry charts for a report, and a line for each chart left out.
import { runTelemetryCharts } from '../../api/charts/telemetry-charts';
import type { TelemetrySample } from '../../api/telemetry';
import { code, figureLink } from './markdown';
import type { FigureSpec } from './report-model';
import { runSlug } from './run-slug';

/** The telemetry charts of one run, and a line for each chart left out. */
export function telemetryFigures(runId: string, samples: readonly TelemetrySample[]): { figures: FigureSpec[]; lines: string[] } {
  if (samples.length === 1) return { figures: [], lines: [`Telemetry of ${code(runId)}: one sample was recorded, too few to chart over time.`] };
  const { charts, missing } = runTelemetryCharts(samples);
  const figures = charts.map((c) => ({ name: `telemetry-${c.id}-${runSlug(runId)}.svg`, title: `${c.title} (${c.unit}), run ${runId}`, alt: c.label, runId, option: c.option }));
  return { figures, lines: [...figures.map((f) => figureLink(f.alt, f.name)), ...missing.map((m) => `Telemetry of ${code(runId)}: ${m}`)] };
}
