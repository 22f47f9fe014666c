import type { TrainEvent, TrainStepEvent } from '../api/training';

function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

const pct = (x: number | null | undefined) => (x == null ? '–' : `${(100 * x).toFixed(2)}%`);

/** One line describing a step event, with a bar when `width` > 0. */
export function formatStep(e: TrainStepEvent, width: number): string {
  const frac = e.globalStep / e.totalSteps;
  const filled = Math.round(frac * width);
  const bar = width > 0 ? `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ` : '';
  // Time left from the measured per-step phases (evaluation at epoch ends comes on top).
  const perStepMs = Object.values(e.phasesMs).reduce((a, b) => a + b, 0);
  const remaining = ((e.totalSteps - e.globalStep) * perStepMs) / 1000;
  return (
    `epoch ${e.epoch}/${e.epochs} ${bar}${(100 * frac).toFixed(0).padStart(3)}% ` +
    `step ${e.step}/${e.stepsPerEpoch} loss ${e.loss.toFixed(4)} acc ${pct(e.accuracy)} ` +
    `${Math.round(e.samplesPerSec).toLocaleString('en-US')} samples/s ETA ${duration(remaining)}`
  );
}

/**
 * Live progress on a terminal: one line redrawn in place; on a pipe or CI log,
 * a line per epoch and one at most every 10 s, so logs stay readable.
 */
export function progressPrinter(stream: NodeJS.WriteStream) {
  const tty = stream.isTTY === true;
  let lastLine = 0;
  return {
    onEvent(e: TrainEvent): void {
      if (e.type === 'step') {
        if (tty) {
          const width = Math.max(10, Math.min(30, (stream.columns ?? 100) - 90));
          stream.write(`\r\x1b[2K${formatStep(e, width)}`);
        } else if (Date.now() - lastLine > 10_000) {
          lastLine = Date.now();
          stream.write(formatStep(e, 0) + '\n');
        }
        return;
      }
      const test = e.testAccuracy !== undefined ? `, test loss ${e.testLoss?.toFixed(4)} acc ${pct(e.testAccuracy)}` : '';
      stream.write(
        `${tty ? '\r\x1b[2K' : ''}epoch ${e.epoch}/${e.epochs} done in ${duration(e.seconds)}: train loss ${e.trainLoss.toFixed(4)} acc ${pct(e.trainAccuracy)}${test}\n`,
      );
    },
    clear(): void {
      if (tty) stream.write('\r\x1b[2K');
    },
  };
}
