import { z } from 'zod';

/**
 * What resources/python/trainbench_probe sends, one JSON object per line. Checked
 * here like any input from outside: a line that does not match is counted and
 * dropped, never trusted.
 */
const PhasesSchema = z.object({ forward: z.number(), loss: z.number(), backward: z.number(), optimizer: z.number() });
const Timing = z.enum(['cuda-events', 'host-clock']);
const OverrideValue = z.union([z.number(), z.boolean(), z.string()]);

export const ProbeHelloSchema = z.looseObject({
  type: z.literal('hello'),
  token: z.string(),
  pid: z.number().int(),
  rank: z.number().int().min(0),
  localRank: z.number().int().min(0),
  worldSize: z.number().int().min(1),
  python: z.string(),
  torch: z.string().optional(),
  /** The machine the rank runs on (its host name) and torchrun's node rank: ranks on other machines join one collector (issue 40). */
  node: z.string().max(255).optional(),
  nodeRank: z.number().int().min(0).optional(),
});

export const ProbeMessageSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('step'),
    step: z.number().int().min(1),
    durMs: z.number().min(0),
    samples: z.number().int().min(0),
    batches: z.number().int().min(0),
    dataMs: z.number().min(0),
    phasesMs: PhasesSchema,
    timing: Timing,
    /** optimizer.step() calls in this iteration (two optimizers, per-group inner steps: one iteration; ADR 0022). */
    optimizerSteps: z.number().int().min(0).optional(),
    /** A GradScaler skipped the iteration's step (inf/NaN gradients): the time is real, the update did not happen. */
    skipped: z.boolean().optional(),
    /** Evaluation inside the iteration (fetches with grad disabled), taken out of durMs. */
    evalMs: z.number().min(0).optional(),
  }),
  /** CUDA-event phase times of a step, read back after the GPU finished it. */
  z.object({ type: z.literal('phases'), step: z.number().int().min(1), phasesMs: PhasesSchema, timing: Timing }),
  z.object({ type: z.literal('applied'), key: z.string(), value: OverrideValue, where: z.string() }),
  /** The all-reduce floor between the job's ranks: a buffer of the step's gradient bytes all-reduced alone after the measured steps. */
  z.object({ type: z.literal('allreduceFloor'), bytes: z.number().min(0), ranks: z.number().int().min(2), ms: z.number().min(0), busBytesPerSec: z.number().min(0) }),
  /** The script's first DistributedDataParallel model, with the settings it made it with (before any ddp.* override). */
  z.object({ type: z.literal('ddp'), where: z.string(), bucketCapMb: z.number().min(0), gradientAsBucketView: z.boolean(), staticGraph: z.boolean() }),
  /** A DataLoader the script made, with its settings after any override (null: torch has no such setting). */
  z.object({
    type: z.literal('loader'),
    where: z.string(),
    settings: z.object({
      num_workers: z.number().int().nullable(),
      prefetch_factor: z.number().int().nullable(),
      pin_memory: z.boolean().nullable(),
      persistent_workers: z.boolean().nullable(),
      batch_size: z.number().int().nullable(),
    }),
  }),
  /** The model FLOPs of one training forward per sample (an estimate, `method` says what was counted); null: not counted, `method` says why. */
  z.object({
    type: z.literal('flops'),
    step: z.number().int().min(1),
    forwardPerSample: z.number().min(0).max(1e18).nullable(),
    /** Forwards an activation checkpoint ran again inside the backward, per sample: extra work, not the model's FLOPs. */
    recomputePerSample: z.number().min(0).max(1e18).optional(),
    layers: z.number().int().min(0),
    method: z.string().max(300),
  }),
  /** torch's own best matmul rate on the training device, measured after the measured steps (a benchmark asks for it). */
  z.object({
    type: z.literal('peak'),
    gflops: z.number().gt(0).max(1e9),
    shape: z.string().max(100),
    /** The precision torch multiplied the fp32 matrices in: tf32 where CUDA was allowed TensorFloat-32 (absent from older probes: fp32). */
    precision: z.enum(['fp32', 'tf32']).optional(),
    how: z.string().max(300),
  }),
  /**
   * On CUDA, after the measured steps: one batch's host tensors (as the loader gave them) copied from pinned memory to
   * the device, the best of several; seconds and gbPerSec null when nothing was timed (`how` says why).
   */
  z.object({
    type: z.literal('copy'),
    bytesPerBatch: z.number().int().min(0).max(1e12),
    tensors: z.number().int().min(0).max(100_000),
    seconds: z.number().gt(0).max(3600).nullable(),
    gbPerSec: z.number().gt(0).max(10_000).nullable(),
    how: z.string().max(300),
  }),
  /** An optimizer the script made: the implementations its torch offers for it, and the one it steps with. */
  z.object({
    type: z.literal('optimizer'),
    where: z.string(),
    class: z.string(),
    offers: z.array(z.enum(['foreach', 'fused'])),
    impl: z.enum(['default', 'foreach', 'fused']),
  }),
  /** A model the script trains (the outermost module holding an optimizer's parameters): its 2-D convolutions, its device. */
  z.object({
    type: z.literal('model'),
    class: z.string(),
    convs: z.number().int().min(0),
    device: z.string(),
    /** On CUDA: whether the GPU computes bfloat16 (torch.cuda.is_bf16_supported()). */
    bf16: z.boolean().optional(),
  }),
  /** The script runs its training forward under its own autocast, in this dtype. */
  z.object({ type: z.literal('autocast'), dtype: z.string(), device: z.string() }),
  /** At the end, with compile.mode set: dynamo's compilations, their seconds, and those during the measured steps. */
  z.object({
    type: z.literal('compile'),
    mode: z.string(),
    compilations: z.number().int().min(0),
    seconds: z.number().min(0),
    inMeasuredSteps: z.number().int().min(0),
  }),
  /** The script's first zero_grad(): whether it dropped the gradients (set_to_none) or wrote zeros. */
  z.object({ type: z.literal('zeroGrad'), setToNone: z.boolean(), where: z.string() }),
  /** Who seeded torch's generators (at the first step): Trainbench's wizard as torch was imported, or the script itself (where). */
  z.object({ type: z.literal('seed'), by: z.enum(['trainbench', 'script']), seed: z.number().int().nullable(), where: z.string() }),
  /** At the end, with amp.dtype set: steps the loss scaler skipped (inf/NaN gradients) and its last scale. */
  z.object({ type: z.literal('amp'), dtype: z.enum(['bf16', 'fp16']), skippedSteps: z.number().int().min(0), scale: z.number().optional() }),
  /** At the end, with copy.non_blocking set: how many of the script's copies of pinned tensors to CUDA it made non-blocking. */
  z.object({ type: z.literal('copies'), nonBlocking: z.number().int().min(0) }),
  z.object({ type: z.literal('error'), code: z.string(), message: z.string() }),
  /**
   * A clock probe (issue 40): the collector answers on the same connection with its own time on receipt and on reply
   * (`{type: 'clock', t0, t1, t2}`), so the rank can estimate its clock's offset NTP-style. Handled by the channel, not kept.
   */
  z.object({ type: z.literal('clock'), t0: z.number() }),
  /** The rank's estimate of the collector's clock minus its own (ms), from its clock probes, with its uncertainty (half the round trip). */
  z.object({ type: z.literal('clockOffset'), at: z.enum(['start', 'end']), offsetMs: z.number(), uncertaintyMs: z.number().min(0), probes: z.number().int().min(1) }),
  /**
   * The collectives of one optimizer step on this rank: when the rank called each and when it completed there (ms on
   * the rank's wall clock), and its bytes. Timed per step from DDP's own stamps, one item spans the step's `count`
   * gradient buckets (arrival: its backward's end); timed per bucket through DDP's comm hook, one item each; the
   * script's own torch.distributed calls (host tensors), one item each, numbered from 1000 in call order.
   */
  z.object({
    type: z.literal('collectives'),
    step: z.number().int().min(1),
    items: z
      .array(
        z.object({
          index: z.number().int().min(0),
          op: z.string().max(40),
          arriveMs: z.number(),
          doneMs: z.number(),
          bytes: z.number().int().min(0).max(1e13),
          count: z.number().int().min(1).max(1e6).optional(),
          /** A torch.distributed call the script made itself (outside the backward), not one of DDP's buckets. */
          explicit: z.boolean().optional(),
        }),
      )
      .max(4096),
  }),
  /** Training losses (the scalar given to backward(), summed per step), read in batches; null: not finite. */
  z.object({ type: z.literal('loss'), steps: z.array(z.number().int().min(1)), values: z.array(z.number().nullable()) }),
  /** The probe stopped reading losses (why); training goes on. */
  z.object({ type: z.literal('lossOff'), reason: z.string() }),
  z.object({ type: z.literal('oom'), batchSize: z.number().int().nullable(), step: z.number().int(), message: z.string() }),
  z.object({
    type: z.literal('done'),
    reason: z.enum(['steps', 'exit']),
    steps: z.number().int(),
    memory: z.looseObject({
      device: z.string(),
      cudaPeakBytes: z.number().nullable(),
      cudaTotalBytes: z.number().nullable(),
      hostPeakRssBytes: z.number().optional(),
    }),
  }),
]);
export type ProbeHello = z.infer<typeof ProbeHelloSchema>;
export type ProbeMessage = z.infer<typeof ProbeMessageSchema>;
export type ProbeStep = Extract<ProbeMessage, { type: 'step' }>;
export type ProbeDone = Extract<ProbeMessage, { type: 'done' }>;
