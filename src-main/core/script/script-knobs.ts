import type { OptimiseChange } from '../../api/optimise';
import type { ScriptLoaderSettings, ScriptOverrideKey, ScriptOverrides } from '../../api/script-target';

/** Where the script runs: what the knobs may be set to. */
export interface ScriptKnobContext {
  device: string;
  /** Logical cores: more DataLoader worker processes than this only contend. */
  cpus: number;
  /** The script's own first DataLoader, before overrides (null: it made none). */
  loader: ScriptLoaderSettings | null;
}

type Proposal = { change: OptimiseChange } | { skip: OptimiseChange; why: string } | null;

const MAX_PREFETCH = 16;

function change(knob: ScriptOverrideKey, from: OptimiseChange['from'], to: OptimiseChange['to'], kind: OptimiseChange['kind'], hypothesis: string, note: string | null = null): OptimiseChange {
  return { knob, from, to, kind, label: `${knob} ${String(from)} -> ${String(to)}`, hypothesis, note };
}

/** A setting's value now: the override when set, else the script's own loader's, else torch's default. */
export function effective(o: ScriptOverrides, ctx: ScriptKnobContext) {
  return {
    workers: o['dataloader.num_workers'] ?? ctx.loader?.num_workers ?? 0,
    prefetch: o['dataloader.prefetch_factor'] ?? ctx.loader?.prefetch_factor ?? 2,
    pin: o['dataloader.pin_memory'] ?? ctx.loader?.pin_memory ?? false,
    batch: o['dataloader.batch_size'] ?? ctx.loader?.batch_size ?? null,
    cudnnBenchmark: o['cudnn.benchmark'] ?? false,
    matmul: o['matmul.precision'] ?? 'highest',
  };
}

/** Each override's next step from the current best, in the order the wizard tries them. */
export const SCRIPT_KNOBS: ((o: ScriptOverrides, ctx: ScriptKnobContext) => Proposal)[] = [
  (o, ctx) => {
    const w = effective(o, ctx).workers;
    // From none, straight to two: one worker process only moves the same work elsewhere.
    const to = w === 0 ? Math.min(2, ctx.cpus) : w * 2;
    if (to <= w || to > ctx.cpus) return null;
    return { change: change('dataloader.num_workers', w, to, 'pipeline', 'worker processes prepare batches in parallel while the main process trains') };
  },
  (o, ctx) => {
    const e = effective(o, ctx);
    const proposal = change('dataloader.prefetch_factor', e.prefetch, Math.min(MAX_PREFETCH, e.prefetch * 2), 'pipeline', 'more batches ready ahead per worker absorb uneven loading times');
    if (e.workers === 0) return { skip: proposal, why: 'prefetching needs worker processes; the loader runs with num_workers 0' };
    return e.prefetch * 2 > MAX_PREFETCH ? null : { change: proposal };
  },
  (o, ctx) => {
    const e = effective(o, ctx);
    if (e.pin) return null;
    const proposal = change('dataloader.pin_memory', false, true, 'pipeline', 'page-locked batches copy to the GPU without a staging copy, and asynchronously');
    return ctx.device.startsWith('cuda') ? { change: proposal } : { skip: proposal, why: `pinned memory speeds up copies to a GPU; this script trains on ${ctx.device}` };
  },
  (o, ctx) => {
    const e = effective(o, ctx);
    if (e.cudnnBenchmark) return null;
    const proposal = change('cudnn.benchmark', false, true, 'numerics', 'cuDNN times its convolution algorithms once and keeps the fastest (it may pick a different, equally valid algorithm)');
    return ctx.device.startsWith('cuda') ? { change: proposal } : { skip: proposal, why: `cuDNN runs on CUDA devices; this script trains on ${ctx.device}` };
  },
  (o, ctx) => {
    const e = effective(o, ctx);
    if (e.matmul !== 'highest') return null;
    const proposal = change('matmul.precision', 'highest', 'high', 'numerics', 'TF32 tensor-core matmuls for float32 (10-bit mantissa inputs, float32 accumulation)');
    return ctx.device.startsWith('cuda') ? { change: proposal } : { skip: proposal, why: `TF32 matmuls need a CUDA device; this script trains on ${ctx.device}` };
  },
  (o, ctx) => {
    const b = effective(o, ctx).batch;
    if (b === null) return null;
    return {
      change: change(
        'dataloader.batch_size',
        b,
        b * 2,
        'recipe',
        'a larger batch amortises the per-step overhead over more samples',
        `a larger batch changes the training recipe: scale the learning rate with it (linear rule: x2) and check the accuracy`,
      ),
    };
  },
  (o, ctx) => {
    const e = effective(o, ctx);
    return {
      skip: change('dataloader.persistent_workers', o['dataloader.persistent_workers'] ?? ctx.loader?.persistent_workers ?? false, true, 'pipeline', 'workers kept between epochs'),
      why: e.workers === 0 ? 'persistent workers need worker processes' : 'keeping workers alive saves their start at each epoch boundary, which a trial of a few steps does not cross: not measurable here',
    };
  },
];
