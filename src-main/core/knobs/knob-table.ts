import type { ScriptOverrides } from '../../api/script-target';
import { ScriptOverridesSchema } from '../../api/script-target';
import type { Bound, EngineOffer, Knob, KnobTarget, Proposal, ScriptBound, ScriptKnobContext, ScriptOffer } from './knob';
import { effective, offered, toProposal } from './knob';

const MAX_PREFETCH = 16;
const MAX_GPU_PREFETCH = 8;

const cuda = (device: string) => device.startsWith('cuda');
/** A model knob's answer before the probe has seen the model (a script whose optimizer trains no module). */
const NO_MODEL = { settled: 'the probe has seen no model the script trains (a module whose parameters an optimizer updates)' };
/** The largest gradient bucket the wizard tries: past it, the first all-reduce starts too late in the backward to overlap. */
const MAX_DDP_BUCKET_MB = 200;

/** A DDP knob's answer where there are no ranks' gradients to all-reduce; null where there are. */
function noAllReduce(ctx: ScriptKnobContext): { settled: string } | null {
  if (!ctx.ddp) return { settled: 'the probe saw no DistributedDataParallel model: the script runs as one process, or syncs its gradients its own way' };
  return ctx.ddp.ranks < 2 ? { settled: 'the job runs one rank: DDP has no gradients to all-reduce' } : null;
}

/**
 * Every knob of the optimisation wizard, once: its kind, and for each target the setting it changes, where
 * it stands in the wizard's order, and its proposer (the next step up from the current best, in the words
 * a person would use, or why not). A target that does not offer a knob says why. Every list the wizards
 * use is derived from this table (see the end of this file); adding a knob is one row.
 *
 * Engine ranks go in tens, so a new knob fits between two without renumbering.
 */
export const KNOB_TABLE: readonly Knob[] = [
  {
    name: 'readFrom',
    kind: 'pipeline',
    engine: {
      setting: 'readFrom',
      rank: { data: 0, h2d: 20, compute: 30, communication: 30, 'host-overhead': 20, unknown: 0 },
      evidence: ['reading-source', 'data-wait'],
      propose: (c) =>
        c.readFrom === 'source'
          ? {
              step: {
                from: 'source',
                to: 'cache',
                label: 'read from the cache instead of the source files',
                hypothesis: 'the cache holds fixed-size records, memory-mapped, in one file per shard',
              },
            }
          : { settled: 'the target already reads from the cache' },
    },
    script: { notOffered: 'a script reads its data its own way: there is no cache for it to read from' },
  },
  {
    name: 'loaderWorkers',
    kind: 'pipeline',
    engine: {
      setting: 'loaderWorkers',
      rank: { data: 10, h2d: 30, compute: 40, communication: 40, 'host-overhead': 30, unknown: 10 },
      evidence: ['data-wait'],
      propose: (c, ctx) => {
        const w = c.options.loaderWorkers;
        const to = w === 0 ? 1 : w * 2;
        if (to > ctx.cpus) return { settled: `${to} loader workers would be more than the ${ctx.cpus} cores of this machine, where they only contend` };
        return { step: { from: w, to, label: `loader workers ${w} -> ${to}`, hypothesis: 'more threads gather batches while the step computes' } };
      },
    },
    script: {
      setting: 'dataloader.num_workers',
      rank: { data: 0, compute: 60, communication: 10 },
      propose: (o, ctx) => {
        const w = effective(o, ctx).workers;
        // From none, straight to two: one worker process only moves the same work elsewhere.
        const to = w === 0 ? Math.min(2, ctx.cpus) : w * 2;
        if (to <= w || to > ctx.cpus) return { settled: `${w} worker processes: more than the ${ctx.cpus} cores of this machine only contend` };
        return { step: { from: w, to, hypothesis: 'worker processes prepare batches in parallel while the main process trains' } };
      },
      randomStreams: "each worker process draws the dataset's random augmentation from its own generator, seeded from the loader's, so the same seed gives other crops and flips",
    },
  },
  {
    name: 'prefetch',
    kind: 'pipeline',
    engine: {
      setting: 'prefetch',
      rank: { data: 20, h2d: 40, compute: 50, communication: 50, 'host-overhead': 40, unknown: 20 },
      evidence: ['data-wait'],
      propose: (c) => {
        const p = c.options.prefetch;
        if (p * 2 > MAX_PREFETCH) return { settled: `prefetch ${p} is at its most: twice it would pass ${MAX_PREFETCH}` };
        return { step: { from: p, to: p * 2, label: `prefetch ${p} -> ${p * 2}`, hypothesis: 'more batches ready ahead absorb uneven loading times' } };
      },
    },
    script: {
      setting: 'dataloader.prefetch_factor',
      rank: { data: 10, compute: 70, communication: 11 },
      propose: (o, ctx) => {
        const e = effective(o, ctx);
        const step = { from: e.prefetch, to: Math.min(MAX_PREFETCH, e.prefetch * 2), hypothesis: 'more batches ready ahead per worker absorb uneven loading times' };
        if (e.workers === 0) return { skip: step, why: 'prefetching needs worker processes; the loader runs with num_workers 0' };
        return e.prefetch * 2 > MAX_PREFETCH ? { settled: `prefetch_factor ${e.prefetch} is at its most: twice it would pass ${MAX_PREFETCH}` } : { step };
      },
    },
  },
  {
    name: 'gpuPrefetch',
    kind: 'pipeline',
    engine: {
      setting: 'gpuPrefetch',
      rank: { data: 30, h2d: 0, compute: 60, communication: 60, 'host-overhead': 50, unknown: 30 },
      evidence: ['h2d-wait'],
      propose: (c, ctx) => {
        const g = c.options.gpuPrefetch;
        const to = Math.min(MAX_GPU_PREFETCH, g * 2);
        const step = { from: g, to, label: `GPU prefetch ${g} -> ${to}`, hypothesis: 'more batches copied ahead on the copy stream overlap copies with compute' };
        if (!cuda(ctx.device)) return { skip: step, why: 'GPU prefetch applies to CUDA devices only' };
        return g * 2 > MAX_GPU_PREFETCH ? { settled: `GPU prefetch ${g} is at its most: twice it would pass ${MAX_GPU_PREFETCH}` } : { step };
      },
    },
    script: { notOffered: "torch's DataLoader has no setting for copying batches to the GPU ahead: a script does that in its own code" },
  },
  {
    name: 'pinnedMemory',
    kind: 'pipeline',
    engine: {
      setting: 'pinnedMemory',
      rank: { data: 40, h2d: 10, compute: 70, communication: 70, 'host-overhead': 70, unknown: 70 },
      evidence: [],
      propose: () => ({
        skip: { from: true, to: true, label: 'pinned host memory', hypothesis: 'pinned buffers copy to the device without a staging copy' },
        why: "the engine's loader always gathers batches into pinned host buffers, so there is no setting to change",
      }),
    },
    script: {
      setting: 'dataloader.pin_memory',
      rank: { data: 20, compute: 80, communication: 12 },
      propose: (o, ctx) => {
        if (effective(o, ctx).pin) return { settled: 'the loader already pins its batches' };
        const step = { from: false, to: true, hypothesis: 'page-locked batches copy to the GPU without a staging copy, and asynchronously' };
        return cuda(ctx.device) ? { step } : { skip: step, why: `pinned memory speeds up copies to a GPU; this script trains on ${ctx.device}` };
      },
    },
  },
  {
    name: 'nonBlockingCopies',
    kind: 'pipeline',
    engine: { notOffered: "the engine copies its batches on a copy stream of its own, always asynchronously (see GPU prefetch)" },
    script: {
      setting: 'copy.non_blocking',
      rank: { data: 25, compute: 85, communication: 13 },
      propose: (o, ctx) => {
        if (o['copy.non_blocking']) return { settled: "the script's copies of pinned batches are non-blocking already" };
        const step = {
          from: false,
          to: true,
          hypothesis: "the script's .to(device) of each pinned batch made non-blocking: the copy runs on the GPU's copy engine while Python goes on to the step; measured, not assumed",
        };
        if (!cuda(ctx.device)) return { skip: step, why: `a non-blocking copy overlaps a copy to a GPU; this script trains on ${ctx.device}` };
        if (!effective(o, ctx).pin) return { skip: step, why: 'a copy from pageable memory waits whatever it is asked: pin_memory is off, so there is nothing to make non-blocking' };
        return { step };
      },
    },
  },
  {
    name: 'precision',
    kind: 'numerics',
    engine: {
      setting: 'precision',
      rank: { data: 60, h2d: 50, compute: 0, communication: 0, 'host-overhead': 60, unknown: 40 },
      evidence: ['compute-bound', 'memory-full'],
      propose: (c, ctx) => {
        if (c.options.precision !== 'fp32') return { settled: `the target already computes in ${c.options.precision}` };
        const step = {
          from: 'fp32',
          to: 'bf16',
          label: 'precision fp32 -> bf16',
          hypothesis: 'bf16 compute halves the bytes moved and uses the tensor cores; fp32 master weights keep the update',
        };
        return cuda(ctx.device) ? { step } : { skip: step, why: `mixed precision needs a CUDA device; this target runs on ${ctx.device}` };
      },
    },
    script: {
      setting: 'amp.dtype',
      rank: { data: 35, compute: 0, communication: 20 },
      propose: (o, ctx) => {
        if (ctx.autocast) return { settled: `the script runs its forward under its own autocast (${ctx.autocast}) already` };
        if (o['amp.dtype']) return { settled: `the model computes in ${o['amp.dtype']} already` };
        if (!ctx.models.length) return NO_MODEL;
        if (!cuda(ctx.device)) {
          return {
            step: {
              from: 'fp32',
              to: 'bf16',
              hypothesis: "the forward under bfloat16 autocast: the CPU's bf16 instructions (AVX512-BF16, AMX) where it has them, half the activation memory; measured, not assumed",
            },
          };
        }
        if (ctx.models.every((m) => m.bf16 !== false)) {
          return { step: { from: 'fp32', to: 'bf16', hypothesis: 'the forward under bfloat16 autocast: tensor-core matmuls and convolutions, half the activation memory; float32 weights keep the update' } };
        }
        return {
          step: {
            from: 'fp32',
            to: 'fp16',
            hypothesis: 'this GPU computes no bfloat16: the forward under float16 autocast on the tensor cores, with dynamic loss scaling so that small gradients do not underflow',
          },
        };
      },
    },
  },
  {
    name: 'channelsLast',
    kind: 'numerics',
    engine: { notOffered: "the engine lays out its convolutions' tensors itself: there is no memory format to choose" },
    script: {
      setting: 'memory.channels_last',
      rank: { data: 37, compute: 20, communication: 23 },
      propose: (o, ctx) => {
        if (o['memory.channels_last']) return { settled: 'the model runs channels_last already' };
        if (!ctx.models.length) return NO_MODEL;
        const step = { from: false, to: true, hypothesis: "convolutions read NHWC directly, the layout cuDNN's tensor-core kernels and oneDNN prefer, without a transpose per layer" };
        if (ctx.models.every((m) => m.convs === 0)) return { skip: step, why: `${ctx.models.map((m) => m.class).join(' and ')} has no 2-D convolution: channels_last changes nothing for it` };
        return { step };
      },
    },
  },
  {
    name: 'cudaGraph',
    kind: 'pipeline',
    engine: {
      setting: 'cudaGraph',
      rank: { data: 70, h2d: 70, compute: 10, communication: 10, 'host-overhead': 0, unknown: 50 },
      evidence: ['host-overhead'],
      propose: (c, ctx) => {
        if (c.options.cudaGraph) return { settled: 'CUDA graphs are already on' };
        const step = { from: false, to: true, label: 'CUDA graphs on', hypothesis: 'one graph launch replaces every kernel launch of the step' };
        if (!cuda(ctx.device)) return { skip: step, why: `CUDA graphs need a CUDA device; this target runs on ${ctx.device}` };
        if (c.options.accumulation !== 1) return { skip: step, why: `CUDA graphs capture one step with accumulation 1; this target accumulates ${c.options.accumulation}` };
        return { step };
      },
    },
    script: { notOffered: "capturing a CUDA graph needs the script's own code around its step" },
  },
  {
    name: 'batchSize',
    kind: 'recipe',
    engine: {
      setting: 'batchSize',
      rank: { data: 50, h2d: 60, compute: 20, communication: 20, 'host-overhead': 10, unknown: 60 },
      evidence: ['memory-room', 'host-overhead'],
      propose: (c, ctx) => {
        const b = c.options.batchSize;
        const searched = ctx.searchedBatch ?? null;
        if (searched === b) return { settled: `the batch is already ${b}, the batch-size search's recommendation` };
        const to = searched ?? b * 2;
        const step = {
          from: b,
          to,
          label: `batch size ${b} -> ${to}`,
          hypothesis:
            searched !== null
              ? "the batch-size search's recommendation: the smallest fitting batch within the noise of the fastest, under the memory headroom"
              : 'a larger batch amortises the per-step overhead over more samples',
          note: `a batch change is a change of the training recipe: scale the learning rate with it (linear rule: x${Number((to / b).toPrecision(3))}) and check the accuracy`,
        };
        return to * c.options.accumulation > ctx.recordsPerEpoch ? { skip: step, why: `a batch of ${to} needs more samples than the ${ctx.recordsPerEpoch} one epoch draws` } : { step };
      },
    },
    script: {
      setting: 'dataloader.batch_size',
      rank: { data: 50, compute: 50, communication: 30 },
      propose: (o, ctx) => {
        const b = effective(o, ctx).batch;
        if (b === null) return { settled: "the probe saw no batch size on the script's DataLoader, so there is nothing to double" };
        return {
          step: {
            from: b,
            to: b * 2,
            hypothesis: 'a larger batch amortises the per-step overhead over more samples',
            note: `a larger batch changes the training recipe: scale the learning rate with it (linear rule: x2) and check the accuracy`,
          },
        };
      },
    },
  },
  {
    name: 'accumulation',
    kind: 'recipe',
    engine: {
      setting: 'accumulation',
      rank: { data: 80, h2d: 80, compute: 80, communication: 80, 'host-overhead': 80, unknown: 80 },
      evidence: [],
      propose: (c) => ({
        skip: { from: c.options.accumulation, to: c.options.accumulation * 2, label: 'gradient accumulation x2 at half the micro-batch', hypothesis: 'the same update from smaller micro-batches' },
        why: 'gradient accumulation makes room in memory at the same update; it does not make a sample faster, so the wizard does not try it for speed',
      }),
    },
    script: { notOffered: "gradient accumulation is in the script's own training loop" },
  },
  {
    name: 'sampleRatio',
    kind: 'recipe',
    engine: {
      setting: 'sampleRatio',
      rank: { data: 90, h2d: 90, compute: 90, communication: 90, 'host-overhead': 90, unknown: 90 },
      evidence: [],
      propose: (c) => ({
        skip: { from: c.options.sampleRatio, to: c.options.sampleRatio, label: 'sample ratio', hypothesis: 'fewer samples per epoch' },
        why: 'the sample ratio changes what an epoch is, not how fast a step runs: set it for the benchmark itself, not through the wizard',
      }),
    },
    script: { notOffered: "what an epoch of a script draws is the script's own affair" },
  },
  {
    name: 'cudnnBenchmark',
    kind: 'numerics',
    engine: { notOffered: 'the engine runs its own kernels and cuBLASLt, not cuDNN: there are no cuDNN algorithms to choose' },
    script: {
      setting: 'cudnn.benchmark',
      rank: { data: 30, compute: 30, communication: 24 },
      propose: (o, ctx) => {
        if (effective(o, ctx).cudnnBenchmark) return { settled: 'cudnn.benchmark is already on' };
        const step = { from: false, to: true, hypothesis: 'cuDNN times its convolution algorithms once and keeps the fastest (it may pick a different, equally valid algorithm)' };
        return cuda(ctx.device) ? { step } : { skip: step, why: `cuDNN runs on CUDA devices; this script trains on ${ctx.device}` };
      },
    },
  },
  {
    name: 'matmulPrecision',
    kind: 'numerics',
    engine: { notOffered: "the engine's float32 matmuls compute in full float32; its faster arithmetic is the precision knob" },
    script: {
      setting: 'matmul.precision',
      rank: { data: 40, compute: 5, communication: 21 },
      propose: (o, ctx) => {
        const m = effective(o, ctx).matmul;
        if (m !== 'highest') return { settled: `the float32 matmul precision is already ${m}` };
        const step = { from: 'highest', to: 'high', hypothesis: 'TF32 tensor-core matmuls for float32 (10-bit mantissa inputs, float32 accumulation)' };
        return cuda(ctx.device) ? { step } : { skip: step, why: `TF32 matmuls need a CUDA device; this script trains on ${ctx.device}` };
      },
    },
  },
  {
    name: 'optimizerImpl',
    kind: 'pipeline',
    engine: { notOffered: "the engine's optimizer step is its own kernel over all parameters: there is no other implementation to choose" },
    script: {
      setting: 'optim.impl',
      rank: { data: 45, compute: 40, communication: 25 },
      propose: (o, ctx) => {
        const seen = ctx.optimizer;
        if (!seen) return { settled: 'the probe has seen no optimizer the script made' };
        const now = o['optim.impl'] ?? seen.impl;
        if (now === 'fused') return { settled: `${seen.class} steps fused already` };
        const fused = { from: now, to: 'fused', hypothesis: 'the whole update in one kernel instead of one per parameter tensor' };
        if (seen.offers.includes('fused')) return { step: fused };
        if (now === 'default' && seen.offers.includes('foreach')) {
          return { step: { from: now, to: 'foreach', hypothesis: 'one kernel per group of tensors instead of one per tensor' } };
        }
        return { skip: fused, why: `${seen.class} takes no fused= argument in torch ${seen.torch ?? '(version unknown)'}` };
      },
    },
  },
  {
    name: 'compile',
    kind: 'numerics',
    engine: { notOffered: "the engine's step is compiled ahead of time, into its own fused kernels: there is no graph compiler to turn on" },
    script: {
      setting: 'compile.mode',
      rank: { data: 39, compute: 10, communication: 22 },
      propose: (o, ctx) => {
        if (o['compile.mode']) return { settled: `the model is compiled already (mode ${o['compile.mode']})` };
        if (!ctx.models.length) return NO_MODEL;
        const step = {
          from: 'off',
          to: 'default',
          hypothesis:
            "torch.compile fuses the model's operations into fewer kernels and removes Python overhead; the compile time is paid at the first steps, outside the measured ones, and the trial says after how many steps it pays off",
        };
        const major = Number((ctx.torch ?? '').split('.')[0]);
        if (ctx.torch !== null && major < 2) return { skip: step, why: `torch.compile needs torch 2.0 or newer; the script runs torch ${ctx.torch}` };
        return { step };
      },
    },
  },
  {
    name: 'zeroGradToNone',
    kind: 'pipeline',
    engine: { notOffered: "the engine's backward writes each gradient whole, so there are no zeros to write first" },
    script: {
      setting: 'optim.set_to_none',
      rank: { data: 46, compute: 42, communication: 26 },
      propose: (o, ctx) => {
        if (o['optim.set_to_none'] || ctx.zeroGradToNone === true) return { settled: "the script's zero_grad() drops the gradients already (torch 2.x's default)" };
        if (ctx.zeroGradToNone === null) return { settled: 'the probe saw no zero_grad() call in the script' };
        return {
          step: {
            from: false,
            to: true,
            hypothesis: 'zero_grad(set_to_none=True) drops the gradients instead of writing zeros into every one: a memory pass less per step, and the next backward writes them fresh',
          },
        };
      },
    },
  },
  {
    name: 'ddpBucketSize',
    kind: 'pipeline',
    engine: { notOffered: 'the engine trains on one device: it has no gradients to all-reduce between ranks' },
    script: {
      setting: 'ddp.bucket_cap_mb',
      rank: { data: 47, compute: 43, communication: 0 },
      propose: (o, ctx) => {
        const none = noAllReduce(ctx);
        if (none) return none;
        const now = o['ddp.bucket_cap_mb'] ?? ctx.ddp!.bucketCapMb;
        if (now >= MAX_DDP_BUCKET_MB) return { settled: `DDP's gradient buckets are ${now} MB already` };
        const to = Math.min(MAX_DDP_BUCKET_MB, Math.max(1, Math.round(now * 4)));
        return {
          step: {
            from: now,
            to,
            label: `gradient buckets ${now} -> ${to} MB`,
            hypothesis: `fewer, larger all-reduces a step over the job's ${ctx.ddp!.ranks} ranks: the fixed cost of each call is paid fewer times, though the first starts later in the backward`,
          },
        };
      },
    },
  },
  {
    name: 'ddpGradientViews',
    kind: 'pipeline',
    engine: { notOffered: 'the engine trains on one device: it has no all-reduce buckets to alias' },
    script: {
      setting: 'ddp.gradient_as_bucket_view',
      rank: { data: 48, compute: 44, communication: 1 },
      propose: (o, ctx) => {
        const none = noAllReduce(ctx);
        if (none) return none;
        if (o['ddp.gradient_as_bucket_view'] ?? ctx.ddp!.gradientAsBucketView) return { settled: "DDP's gradients are views of its buckets already" };
        return {
          step: {
            from: false,
            to: true,
            hypothesis: 'each gradient becomes a view into its all-reduce bucket: no copy into the bucket and back every step, and one gradient-sized buffer less in memory',
          },
        };
      },
    },
  },
  {
    name: 'ddpStaticGraph',
    kind: 'pipeline',
    engine: { notOffered: "the engine's step is one fixed graph already: there is no DDP bookkeeping to skip" },
    script: {
      setting: 'ddp.static_graph',
      rank: { data: 49, compute: 45, communication: 2 },
      propose: (o, ctx) => {
        const none = noAllReduce(ctx);
        if (none) return none;
        if (o['ddp.static_graph'] ?? ctx.ddp!.staticGraph) return { settled: 'DDP knows the graph is static already' };
        return {
          step: {
            from: false,
            to: true,
            hypothesis: 'DDP learns the graph in the first iteration and then skips its per-iteration bookkeeping, and orders the buckets as the backward fills them',
            note: 'valid only when every iteration uses the same parameters in the same order: a script whose graph varies fails the trial or moves its loss, and the loss guard rejects it',
          },
        };
      },
    },
  },
  {
    name: 'persistentWorkers',
    kind: 'pipeline',
    engine: { notOffered: "the engine's loader threads live for the whole run: a new epoch only gives them a new order" },
    script: {
      setting: 'dataloader.persistent_workers',
      rank: { data: 60, compute: 90, communication: 40 },
      propose: (o, ctx) => {
        const e = effective(o, ctx);
        return {
          skip: { from: e.persistent, to: true, hypothesis: 'workers kept between epochs' },
          why: e.workers === 0 ? 'persistent workers need worker processes' : 'keeping workers alive saves their start at each epoch boundary, which a trial of a few steps does not cross: not measurable here',
        };
      },
      randomStreams: 'workers kept alive go on with their generators into the next epoch instead of being seeded afresh, and the loader draws no new base seed, so from the second epoch on the same seed gives other augmentations and another order',
    },
  },
];

/** A knob as one target offers it, with the row's name and kind. */
export type Offered<O> = O & { name: string; kind: Knob['kind'] };

/** The engine's knobs, in table order. */
export const ENGINE_KNOBS: readonly Offered<EngineOffer>[] = KNOB_TABLE.flatMap((k) => (offered(k.engine) ? [{ ...k.engine, name: k.name, kind: k.kind }] : []));

/** The engine's knobs in the order the diagnosis suggests: what bounds the step first. */
export function engineOrder(bound: Bound): Offered<EngineOffer>[] {
  return [...ENGINE_KNOBS].sort((a, b) => a.rank[bound] - b.rank[bound]);
}

const SCRIPT_OFFERS: readonly Offered<ScriptOffer>[] = KNOB_TABLE.flatMap((k) => (offered(k.script) ? [{ ...k.script, name: k.name, kind: k.kind }] : []));

/** The script's knobs in the order the wizard tries them for what bounds the script's step (its baseline's data wait). */
export function scriptOrder(bound: ScriptBound): Offered<ScriptOffer>[] {
  return [...SCRIPT_OFFERS].sort((a, b) => a.rank[bound] - b.rank[bound]);
}

/** Why a change of a script setting alters which random streams the training draws from (the knob table's words), or null: it does not. */
export function scriptRandomStreams(setting: string): string | null {
  return SCRIPT_OFFERS.find((k) => k.setting === setting)?.randomStreams ?? null;
}

/** The script's knobs in the data-bound order (the loader first). */
export const SCRIPT_KNOBS_IN_ORDER: readonly Offered<ScriptOffer>[] = scriptOrder('data');

/** Each script knob's next step from the current overrides, in the order for the context's bound, as the wizard uses it. */
export function scriptProposals(o: ScriptOverrides, ctx: ScriptKnobContext): Proposal[] {
  return scriptOrder(ctx.bound).map((knob) => withinRange(toProposal(knob.setting, knob.kind, knob.propose(o, ctx))));
}

/** Each script knob's proposer, in the data-bound order. */
export const SCRIPT_KNOBS: ((o: ScriptOverrides, ctx: ScriptKnobContext) => Proposal)[] = SCRIPT_KNOBS_IN_ORDER.map(
  (knob) => (o, ctx) => withinRange(toProposal(knob.setting, knob.kind, knob.propose(o, ctx))),
);

/**
 * A change to a value Trainbench does not set (a batch size doubled past its range, from a script's own loader or
 * a resumed state's) is skipped with why, never launched: what the wizard tries passes the overrides' schema.
 */
function withinRange(p: Proposal): Proposal {
  if (!('change' in p)) return p;
  const checked = ScriptOverridesSchema.safeParse({ [p.change.knob]: p.change.to });
  return checked.success ? p : { skip: p.change, why: `${p.change.knob} ${String(p.change.to)} is outside what Trainbench sets (${checked.error.issues[0]?.message ?? 'refused'})` };
}

/** The knobs a target does not offer, each with why. */
export function notOfferedOn(target: KnobTarget): { name: string; why: string }[] {
  return KNOB_TABLE.flatMap((k) => {
    const offer = k[target];
    return 'notOffered' in offer ? [{ name: k.name, why: offer.notOffered }] : [];
  });
}
