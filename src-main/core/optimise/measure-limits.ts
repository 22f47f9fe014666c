import type { Limits, OptimiseConfig } from '../../api/optimise';
import type { ModelSpec } from '../../api/model-spec';
import type { EngineClient } from '../../engine/engine-client';
import type { PreparedBenchmark } from '../benchmarks/training-benchmark';
import { measureGemmPeak } from '../benchmarks/gemm-peak';
import { physicalLimits } from './limits';

/**
 * Measures the rates behind the physical limits on this machine: the engine's
 * GEMM on the target's device, the sequential read of the files the target
 * reads (the cache's shards, or the source files), and then the floors.
 */
export async function measureLimits(engine: EngineClient, spec: ModelSpec, config: OptimiseConfig, prepared: PreparedBenchmark, baselineStepMs: number, device: string): Promise<Limits> {
  const info = await engine.modelInfo(spec);
  const { peak: gemm, missing: gemmMissing } = await measureGemmPeak(engine, device, config.options.precision, config.options.threads);
  const read = await engine.sequentialRead(prepared.readFiles).catch(() => null);
  const readWhat = config.readFrom === 'source' ? `the source files (${prepared.readFiles.length})` : `the cache's ${prepared.readFiles.length} shard(s)`;
  return physicalLimits({
    flopsPerSample: info.flopsPerSample,
    samplesPerStep: prepared.perStep,
    gemm,
    gemmMissing,
    bytesPerSample: prepared.manifest.fields.reduce((s, f) => s + f.recordBytes, 0),
    readMBps: read && read.mbPerSec > 0 ? read.mbPerSec : null,
    readWhat,
    h2dMBps: null,
    h2dMissing: device.startsWith('cuda') ? 'the engine has no host-to-device bandwidth probe yet' : 'a CPU target copies nothing to a device',
    baselineStepMs,
  });
}
