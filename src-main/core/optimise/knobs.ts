import type { Diagnosis, OptimiseChange, OptimiseConfig } from '../../api/optimise';

/** Where the wizard runs: what the knobs may be set to. */
export interface KnobContext {
  device: string;
  /** Logical cores of this machine: more loader workers than this only contend. */
  cpus: number;
  /** Records one epoch draws: no batch may exceed it. */
  recordsPerEpoch: number;
  /** The batch-size search's recommendation, when it ran and found one. */
  searchedBatch?: number | null;
}

/** A change a knob proposes, or why it has nothing to propose here. */
type Proposal = { change: OptimiseChange } | { skip: OptimiseChange; why: string } | null;

const MAX_PREFETCH = 16;
const MAX_GPU_PREFETCH = 8;

function change(knob: string, from: OptimiseChange['from'], to: OptimiseChange['to'], kind: OptimiseChange['kind'], label: string, hypothesis: string, note: string | null = null): OptimiseChange {
  return { knob, from, to, kind, label, hypothesis, note };
}

/** Each knob's next step up from the current best, in the words a person would use. */
const KNOBS: Record<string, (c: OptimiseConfig, ctx: KnobContext) => Proposal> = {
  readFrom: (c) =>
    c.readFrom === 'source' ? { change: change('readFrom', 'source', 'cache', 'pipeline', 'read from the cache instead of the source files', 'the cache holds fixed-size records, memory-mapped, in one file per shard') } : null,
  loaderWorkers: (c, ctx) => {
    const w = c.options.loaderWorkers;
    const to = w === 0 ? 1 : w * 2;
    if (to > ctx.cpus) return null;
    return { change: change('loaderWorkers', w, to, 'pipeline', `loader workers ${w} -> ${to}`, 'more threads gather batches while the step computes') };
  },
  prefetch: (c) => {
    const p = c.options.prefetch;
    if (p * 2 > MAX_PREFETCH) return null;
    return { change: change('prefetch', p, p * 2, 'pipeline', `prefetch ${p} -> ${p * 2}`, 'more batches ready ahead absorb uneven loading times') };
  },
  gpuPrefetch: (c, ctx) => {
    const g = c.options.gpuPrefetch;
    const proposal = change('gpuPrefetch', g, Math.min(MAX_GPU_PREFETCH, g * 2), 'pipeline', `GPU prefetch ${g} -> ${Math.min(MAX_GPU_PREFETCH, g * 2)}`, 'more batches copied ahead on the copy stream overlap copies with compute');
    if (!ctx.device.startsWith('cuda')) return { skip: proposal, why: 'GPU prefetch applies to CUDA devices only' };
    return g * 2 > MAX_GPU_PREFETCH ? null : { change: proposal };
  },
  pinnedMemory: () => ({
    skip: change('pinnedMemory', true, true, 'pipeline', 'pinned host memory', 'pinned buffers copy to the device without a staging copy'),
    why: "the engine's loader always gathers batches into pinned host buffers, so there is no setting to change",
  }),
  precision: (c, ctx) => {
    if (c.options.precision !== 'fp32') return null;
    const proposal = change('precision', 'fp32', 'bf16', 'numerics', 'precision fp32 -> bf16', 'bf16 compute halves the bytes moved and uses the tensor cores; fp32 master weights keep the update');
    return ctx.device.startsWith('cuda') ? { change: proposal } : { skip: proposal, why: `mixed precision needs a CUDA device; this target runs on ${ctx.device}` };
  },
  cudaGraph: (c, ctx) => {
    if (c.options.cudaGraph) return null;
    const proposal = change('cudaGraph', false, true, 'pipeline', 'CUDA graphs on', 'one graph launch replaces every kernel launch of the step');
    if (!ctx.device.startsWith('cuda')) return { skip: proposal, why: `CUDA graphs need a CUDA device; this target runs on ${ctx.device}` };
    if (c.options.accumulation !== 1) return { skip: proposal, why: `CUDA graphs capture one step with accumulation 1; this target accumulates ${c.options.accumulation}` };
    return { change: proposal };
  },
  batchSize: (c, ctx) => {
    const b = c.options.batchSize;
    const searched = ctx.searchedBatch ?? null;
    if (searched === b) return null;
    const to = searched ?? b * 2;
    const proposal = change(
      'batchSize',
      b,
      to,
      'recipe',
      `batch size ${b} -> ${to}`,
      searched !== null
        ? "the batch-size search's recommendation: the fitting batch with the best throughput under the memory headroom"
        : 'a larger batch amortises the per-step overhead over more samples',
      `a batch change is a change of the training recipe: scale the learning rate with it (linear rule: x${Number((to / b).toPrecision(3))}) and check the accuracy`,
    );
    return to * c.options.accumulation > ctx.recordsPerEpoch ? { skip: proposal, why: `a batch of ${to} needs more samples than the ${ctx.recordsPerEpoch} one epoch draws` } : { change: proposal };
  },
  accumulation: (c) => ({
    skip: change('accumulation', c.options.accumulation, c.options.accumulation * 2, 'recipe', 'gradient accumulation x2 at half the micro-batch', 'the same update from smaller micro-batches'),
    why: 'gradient accumulation makes room in memory at the same update; it does not make a sample faster, so the wizard does not try it for speed',
  }),
  sampleRatio: (c) => ({
    skip: change('sampleRatio', c.options.sampleRatio, c.options.sampleRatio, 'recipe', 'sample ratio', 'fewer samples per epoch'),
    why: 'the sample ratio changes what an epoch is, not how fast a step runs: set it for the benchmark itself, not through the wizard',
  }),
};

/** The knobs in the order the diagnosis suggests: what bounds the step first. */
const ORDER: Record<Diagnosis['bound'], string[]> = {
  data: ['readFrom', 'loaderWorkers', 'prefetch', 'gpuPrefetch', 'pinnedMemory', 'batchSize', 'precision', 'cudaGraph', 'accumulation', 'sampleRatio'],
  h2d: ['gpuPrefetch', 'pinnedMemory', 'readFrom', 'loaderWorkers', 'prefetch', 'precision', 'batchSize', 'cudaGraph', 'accumulation', 'sampleRatio'],
  compute: ['precision', 'cudaGraph', 'batchSize', 'readFrom', 'loaderWorkers', 'prefetch', 'gpuPrefetch', 'pinnedMemory', 'accumulation', 'sampleRatio'],
  'host-overhead': ['cudaGraph', 'batchSize', 'readFrom', 'loaderWorkers', 'prefetch', 'gpuPrefetch', 'precision', 'pinnedMemory', 'accumulation', 'sampleRatio'],
  unknown: ['readFrom', 'loaderWorkers', 'prefetch', 'gpuPrefetch', 'precision', 'cudaGraph', 'batchSize', 'pinnedMemory', 'accumulation', 'sampleRatio'],
};

/** The hypothesis in the diagnosis's own numbers, where a finding speaks to the knob. */
function because(knob: string, d: Diagnosis): string | null {
  const f = (id: string) => d.findings.find((x) => x.id === id);
  const ids: Record<string, string[]> = {
    readFrom: ['reading-source', 'data-wait'],
    loaderWorkers: ['data-wait'],
    prefetch: ['data-wait'],
    gpuPrefetch: ['h2d-wait'],
    precision: ['compute-bound', 'memory-full'],
    cudaGraph: ['host-overhead'],
    batchSize: ['memory-room', 'host-overhead'],
  };
  const hit = (ids[knob] ?? []).map(f).find((x) => x !== undefined);
  return hit ? `${hit.measurement.name} = ${hit.measurement.value.toFixed(1)} ${hit.measurement.unit}` : null;
}

export interface Candidates {
  changes: OptimiseChange[];
  skipped: { change: OptimiseChange; why: string }[];
}

/** Every knob's next step from `best`, ordered by the diagnosis, less the knobs in `exhausted`. */
export function candidateChanges(best: OptimiseConfig, diagnosis: Diagnosis, ctx: KnobContext, exhausted: readonly string[] = []): Candidates {
  const out: Candidates = { changes: [], skipped: [] };
  // High data wait puts the loader first even when the arithmetic phases add up to more (the GNN guide's first branch).
  const order = diagnosis.findings.some((f) => f.id === 'data-wait') ? ORDER.data : ORDER[diagnosis.bound];
  for (const knob of order) {
    const p = KNOBS[knob](best, ctx);
    if (!p) continue;
    if ('skip' in p) out.skipped.push({ change: p.skip, why: p.why });
    else if (!exhausted.includes(knob)) {
      const why = because(knob, diagnosis);
      out.changes.push(why ? { ...p.change, hypothesis: `${p.change.hypothesis} (${why})` } : p.change);
    }
  }
  return out;
}

/** The configuration with one change applied. */
export function applyChange(config: OptimiseConfig, c: OptimiseChange): OptimiseConfig {
  if (c.knob === 'readFrom') return { ...config, readFrom: c.to as OptimiseConfig['readFrom'] };
  if (!(c.knob in config.options)) throw new RangeError(`applyChange: ${c.knob} is not a setting of the target`);
  return { ...config, options: { ...config.options, [c.knob]: c.to } };
}
