import type { Utilisation } from '../../api/benchmark';
import { TRAINING_FLOPS_PER_FORWARD } from './limits';
import type { DatasheetPrecision } from './datasheet-peaks';
import { datasheetPeak } from './datasheet-peaks';

/** The matrix rate measured on a device now, at its current clocks, and how (the engine's GEMM, or torch's matmul). */
export interface GemmPeak {
  gflops: number;
  shape: string;
  how: string;
}


export interface UtilisationInputs {
  /** Forward FLOPs per sample, from the model's spec. */
  flopsPerSample: number;
  /** Training FLOPs a step must do per sample where the model says (the engine's); else 3x the forward. */
  trainingFlopsPerSample?: number;
  samplesPerSec: number;
  peak: GemmPeak | null;
  peakMissing: string;
  /** The device's name as the driver gives it (a CPU's model for cpu). */
  deviceName: string;
  cuda: boolean;
  /** The precision of the arithmetic: the datasheet figure compared with (tf32: a script's fp32 matmuls on TensorFloat-32). */
  precision: DatasheetPrecision;
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/**
 * Model-FLOPs utilisation against the peak measured on this device and against its datasheet peak. A value above
 * 100% of either is a measurement error (FLOPs overcounted, a peak measured low, a clock that changed), so it
 * is given as a problem and its MFU left out, never shown as a result.
 */
export function utilisationOf(x: UtilisationInputs): Utilisation {
  const trainingFlopsPerSample = x.trainingFlopsPerSample ?? TRAINING_FLOPS_PER_FORWARD * x.flopsPerSample;
  const achievedGflops = (trainingFlopsPerSample * x.samplesPerSec) / 1e9;
  const problems: string[] = [];
  const share = (peakGflops: number, what: string): number | null => {
    const mfu = achievedGflops / peakGflops;
    if (mfu > 1) {
      problems.push(`${pct(mfu)} of ${what} is impossible: a measurement error (FLOPs per sample overcounted, or the peak measured at other clocks), not a result`);
      return null;
    }
    return mfu;
  };
  const measured = x.peak ? { ...x.peak, mfu: share(x.peak.gflops, `the peak measured on this device (${Math.round(x.peak.gflops)} GFLOP/s)`) } : null;
  const sheet = x.cuda ? datasheetPeak(x.deviceName) : null;
  const sheetTflops = sheet?.tflops[x.precision];
  const datasheet =
    sheet && sheetTflops !== undefined
      ? { device: sheet.device, precision: x.precision, gflops: 1000 * sheetTflops, source: sheet.source, mfu: share(1000 * sheetTflops, `the ${sheet.device} datasheet peak (${sheetTflops} TFLOP/s ${x.precision})`) }
      : null;
  return { trainingFlopsPerSample, achievedGflops, measured, measuredMissing: x.peak ? null : x.peakMissing, datasheet, problems };
}
