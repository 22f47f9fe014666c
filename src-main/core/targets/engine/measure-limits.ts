import type { Limits, OptimiseConfig } from '../../../api/optimise';
import type { ModelSpec } from '../../../api/model-spec';
import type { EngineClient } from '../../../engine/engine-client';
import type { PreparedBenchmark } from './engine-benchmark';
import { gemmPeakAbove } from './gemm-peak';
import { physicalLimits } from '../../stats/limits';

/** Copies timed per measurement: the best of ten, after a warm-up, takes milliseconds for a batch. */
const COPY_REPS = 10;

/**
 * The pinned host-to-device rate for copies of one micro-batch (as the prefetch ring copies them: a step
 * with accumulation copies each micro-batch on its own, so the rate at that size is the one that counts).
 */
async function measureCopyRate(engine: EngineClient, device: string, microBatchBytes: number): Promise<{ mbPerSec: number | null; how: string | null; missing: string }> {
  if (!device.startsWith('cuda')) return { mbPerSec: null, how: null, missing: 'a CPU target copies nothing to a device' };
  const index = Number(device.split(':')[1] ?? 0);
  try {
    const r = await engine.benchH2dCopy(index, Math.max(1, Math.round(microBatchBytes)), COPY_REPS);
    return { mbPerSec: r.bestMBps, how: `${r.how}, ${r.bytes.toLocaleString('en-US')} bytes a copy`, missing: '' };
  } catch (err) {
    return { mbPerSec: null, how: null, missing: `the host-to-device copy benchmark on ${device} failed: ${(err as Error).message}` };
  }
}

/**
 * Measures the rates behind the physical limits on this machine: the engine's
 * GEMM on the target's device, the sequential read of the files the target
 * reads (the cache's shards, or the source files), and then the floors.
 */
export async function measureLimits(engine: EngineClient, spec: ModelSpec, config: OptimiseConfig, prepared: PreparedBenchmark, baselineStepMs: number, device: string): Promise<Limits> {
  const info = await engine.modelInfo(spec);
  // The baseline's own arithmetic rate: a peak measured below it was measured while something else held the device.
  const achievedGflops = (info.trainingFlopsPerSample * prepared.perStep) / baselineStepMs / 1e6;
  const { peak: gemm, missing: gemmMissing } = await gemmPeakAbove(engine, device, config.options.precision, config.options.threads, achievedGflops);
  const read = await engine.sequentialRead(prepared.readFiles).catch(() => null);
  const readWhat = config.readFrom === 'source' ? `the source files (${prepared.readFiles.length})` : `the cache's ${prepared.readFiles.length} shard(s)`;
  const bytesPerSample = prepared.manifest.fields.reduce((s, f) => s + f.recordBytes, 0);
  const copy = await measureCopyRate(engine, device, bytesPerSample * config.options.batchSize);
  return physicalLimits({
    flopsPerSample: info.flopsPerSample,
    trainingFlopsPerSample: info.trainingFlopsPerSample,
    samplesPerStep: prepared.perStep,
    gemm,
    gemmMissing,
    bytesPerSample,
    readMBps: read && read.mbPerSec > 0 ? read.mbPerSec : null,
    readWhat,
    h2dMBps: copy.mbPerSec,
    h2dHow: copy.how,
    h2dMissing: copy.missing,
    baselineStepMs,
  });
}
