import type { BuildProgress } from '../api/datasets';
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

const bar = (frac: number, width: number) => {
  const filled = Math.round(Math.max(0, Math.min(1, frac)) * width);
  return width > 0 ? `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ` : '';
};
const count = (n: number) => Math.round(n).toLocaleString('en-US');

/** One line describing a step event, with a bar when `width` > 0. */
export function formatStep(e: TrainStepEvent, width: number): string {
  const frac = e.globalStep / e.totalSteps;
  // Time left from the measured per-step phases (evaluation at epoch ends comes on top).
  const perStepMs = Object.values(e.phasesMs).reduce((a, b) => a + b, 0);
  const remaining = ((e.totalSteps - e.globalStep) * perStepMs) / 1000;
  return (
    `epoch ${e.epoch}/${e.epochs} ${bar(frac, width)}${(100 * frac).toFixed(0).padStart(3)}% ` +
    `step ${e.step}/${e.stepsPerEpoch} loss ${e.loss.toFixed(4)} acc ${pct(e.accuracy)} ` +
    `${Math.round(e.samplesPerSec).toLocaleString('en-US')} samples/s ETA ${duration(remaining)}`
  );
}

/** One line describing a dataset cache build, with a bar when `width` > 0. */
export function formatBuild(p: BuildProgress, width: number): string {
  if (p.phase === 'done') return `dataset cached: ${count(p.recordsTotal)} records, ${(p.bytesTotal / 1e6).toFixed(0)} MB`;
  const frac = p.bytesTotal > 0 ? p.bytesWritten / p.bytesTotal : 1;
  const what = p.phase === 'reading' || p.phase === 'generating' ? `${count(p.records)}/${count(p.recordsTotal)} records` : `${p.phase}`;
  const eta = p.etaSeconds === null ? '' : ` ETA ${duration(p.etaSeconds)}`;
  const doing = p.phase === 'generating' ? 'generating example' : 'caching dataset';
  return `${doing} ${bar(frac, width)}${(100 * frac).toFixed(0).padStart(3)}% ${what} ${(p.bytesPerSec / 1e6).toFixed(0)} MB/s${eta}`;
}

const LOG_INTERVAL_MS = 10_000;

/**
 * Live progress on a terminal: one line redrawn in place; on a pipe or CI log,
 * a line per epoch and one at most every 10 s, so logs stay readable. Before
 * the first step it shows what is being prepared (a label with the seconds
 * spent, then the dataset cache build), so a first run is never silent.
 */
export function progressPrinter(stream: NodeJS.WriteStream) {
  const tty = stream.isTTY === true;
  const width = () => Math.max(10, Math.min(30, (stream.columns ?? 100) - 90));
  let lastLine = 0;
  let lastBuildLine = 0;
  let ticker: NodeJS.Timeout | null = null;
  let lastJob: string | null = null;
  const stopWaiting = () => {
    if (ticker) clearInterval(ticker);
    ticker = null;
  };
  return {
    /** Says what is happening until the next build or training event; on a terminal the seconds tick. */
    waiting(label: string): void {
      stopWaiting();
      const since = Date.now();
      const seconds = () => Math.round((Date.now() - since) / 1000);
      if (tty) {
        const draw = () => stream.write(`\r\x1b[2K${label}... ${seconds()} s`);
        draw();
        ticker = setInterval(draw, 1000);
      } else {
        stream.write(`${label}...\n`);
        ticker = setInterval(() => stream.write(`${label}... ${seconds()} s\n`), LOG_INTERVAL_MS);
      }
      ticker.unref();
    },
    onBuild(p: BuildProgress): void {
      stopWaiting();
      const first = p.jobId !== lastJob;
      lastJob = p.jobId;
      if (tty) {
        stream.write(`\r\x1b[2K${formatBuild(p, width())}${p.phase === 'done' ? '\n' : ''}`);
      } else if (first || p.phase === 'done' || Date.now() - lastBuildLine > LOG_INTERVAL_MS) {
        lastBuildLine = Date.now();
        stream.write(formatBuild(p, 0) + '\n');
      }
    },
    onEvent(e: TrainEvent): void {
      stopWaiting();
      if (e.type === 'step') {
        if (tty) {
          stream.write(`\r\x1b[2K${formatStep(e, width())}`);
        } else if (Date.now() - lastLine > LOG_INTERVAL_MS) {
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
      stopWaiting();
      if (tty) stream.write('\r\x1b[2K');
    },
  };
}
