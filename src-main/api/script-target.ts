import { z } from 'zod';

import { IdSchema } from './ids';
import { ConfounderPolicySchema, LimitSchema, OptimisePresetSchema, WizardObjectiveSchema, OptimiseTrialSchema, WizardBaselineSchema } from './optimise';

/**
 * A user's own training command as a target: run as is, with Trainbench's probe
 * (resources/python) injected through the environment. The working directory is
 * the user's project, chosen explicitly; it may lie outside the workspace.
 */
/**
 * What the OS takes of one argument or variable: Linux refuses a string over 128 KiB
 * (MAX_ARG_STRLEN) and an argv + environment over its ARG_MAX (2 MiB by default) with E2BIG,
 * and no string can hold a NUL byte. Checked here, so the request is refused naming the value
 * (E_BAD_INPUT) rather than failing in spawn.
 */
const MAX_ARG_CHARS = 128 * 1024;
const MAX_ARGV_AND_ENV_CHARS = 1024 * 1024;
const ArgSchema = (what: string) =>
  z
    .string()
    .max(MAX_ARG_CHARS, `${what} is longer than the ${MAX_ARG_CHARS} characters the OS passes to a program`)
    .refine((s) => !s.includes('\0'), { message: `${what} contains a NUL byte, which no program can receive` });

export const ScriptTargetSchema = z
  .object({
    kind: z.literal('script'),
    /** argv: the program and its arguments, e.g. ['python3', 'train.py', '--epochs', '1']; no shell unless the user names one. */
    command: z.array(ArgSchema('an argument').min(1)).min(1).max(4096),
    /** Absolute path of the folder the command runs in. */
    cwd: ArgSchema('the working directory').min(1),
    /** Added to Trainbench's own environment (PYTHONPATH is prepended to, never replaced). */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _').max(1024), ArgSchema('an environment value')).default({}),
  })
  .strict()
  .superRefine((t, ctx) => {
    const chars = t.command.reduce((n, a) => n + a.length + 1, 0) + Object.entries(t.env).reduce((n, [k, v]) => n + k.length + v.length + 2, 0);
    if (chars > MAX_ARGV_AND_ENV_CHARS) {
      ctx.addIssue({ code: 'custom', path: ['command'], message: `the command and its environment come to ${chars} characters, more than the ${MAX_ARGV_AND_ENV_CHARS} a program is given` });
    }
  });
export type ScriptTarget = z.infer<typeof ScriptTargetSchema>;

/**
 * Environment variables that change which code the command runs: the confirmation says so
 * plainly before Run (the person may want them; they must see them).
 */
export const SENSITIVE_ENV: Readonly<Record<string, string>> = {
  LD_PRELOAD: 'loads these libraries into the program and every program it starts',
  LD_LIBRARY_PATH: 'makes the program load its shared libraries from these folders first',
  PYTHONPATH: 'makes Python import modules from these folders first (Trainbench adds its probe in front)',
  NODE_OPTIONS: 'passes these options (a --require of any file included) to every Node.js program it starts',
  PATH: 'changes which programs are found by name, the command itself included',
  BASH_ENV: 'makes bash run this file before the script it was given',
  ENV: 'makes sh run this file when it starts',
  PYTHONHOME: 'makes Python load its standard library from this folder',
  LD_AUDIT: 'loads these libraries into the program before it runs',
  GCONV_PATH: 'makes the C library load character-set converters from these folders',
  HOME: "moves the home folder, whose Python user site-packages (usercustomize) and tools' settings are loaded",
  PYTHONUSERBASE: 'makes Python import from the user site-packages under this folder (usercustomize runs at start)',
  PYTHONPYCACHEPREFIX: 'makes Python load compiled modules (.pyc) from this folder instead of beside their sources',
  PYTHONSTARTUP: 'makes Python run this file when it starts interactively',
  PYTHONBREAKPOINT: 'makes breakpoint() call this function, imported by name',
  PYTHONPLATLIBDIR: "changes the folder name Python's own modules are imported from",
  XDG_CACHE_HOME: 'moves the cache folder, where torch.compile and Triton keep compiled code they load again',
  TMPDIR: 'moves the temporary folder, where torch.compile keeps compiled code it loads again by default',
  TORCHINDUCTOR_CACHE_DIR: 'makes torch.compile load compiled code from this folder',
  TRITON_CACHE_DIR: 'makes Triton load compiled kernels from this folder',
  TORCH_EXTENSIONS_DIR: 'makes PyTorch load compiled C++ extensions from this folder',
};

/** The sensitive variables a target sets, each with what it does. */
export function sensitiveEnv(env: Readonly<Record<string, string>> | undefined): { name: string; value: string; why: string }[] {
  return Object.entries(env ?? {})
    .filter(([name]) => Object.hasOwn(SENSITIVE_ENV, name))
    .map(([name, value]) => ({ name, value, why: SENSITIVE_ENV[name] }));
}

/** The overrides the probe knows (`--set key=value`): what each accepts, named once for the CLI, the API and the wizard. */
export const SCRIPT_OVERRIDES = {
  'dataloader.num_workers': z.number().int().min(0).max(1024),
  'dataloader.prefetch_factor': z.number().int().min(1).max(1024),
  'dataloader.pin_memory': z.boolean(),
  'dataloader.persistent_workers': z.boolean(),
  'dataloader.batch_size': z.number().int().min(1).max(1 << 24),
  'cudnn.benchmark': z.boolean(),
  'matmul.precision': z.enum(['highest', 'high', 'medium']),
  /** The optimizer's implementation: one kernel per group of tensors (foreach) or the whole update in one (fused). */
  'optim.impl': z.enum(['foreach', 'fused']),
  /** Mixed precision: the model's forward under torch.autocast in this dtype (fp16 with dynamic loss scaling). */
  'amp.dtype': z.enum(['bf16', 'fp16']),
  /** The model's parameters and its 4-D inputs in channels_last (NHWC) memory format. */
  'memory.channels_last': z.boolean(),
  /** torch.compile of the model, in place, in this mode (torch 2.0+). */
  'compile.mode': z.enum(['default', 'reduce-overhead', 'max-autotune']),
  /** zero_grad() drops the gradients (None) instead of writing zeros into them. */
  'optim.set_to_none': z.boolean(),
  /** The script's copies of pinned batches to a CUDA device made non-blocking (`.to(device, non_blocking=True)`). */
  'copy.non_blocking': z.boolean(),
  /** A job of several ranks (issue 40): DistributedDataParallel's gradient bucket size in MB (DDP's default: 25). */
  'ddp.bucket_cap_mb': z.number().int().min(1).max(16_384),
  /** DDP's gradients as views into its all-reduce buckets instead of copies (gradient_as_bucket_view=True). */
  'ddp.gradient_as_bucket_view': z.boolean(),
  /** DDP told the graph is the same every iteration (static_graph=True). */
  'ddp.static_graph': z.boolean(),
} as const;
export type ScriptOverrideKey = keyof typeof SCRIPT_OVERRIDES;
/** Each override as a person names it, for labels and verdicts; the key stays where it is typed (--set, code to paste). */
export const SCRIPT_OVERRIDE_WORDS: Readonly<Record<ScriptOverrideKey, string>> = {
  'dataloader.num_workers': 'loader workers',
  'dataloader.prefetch_factor': 'prefetch',
  'dataloader.pin_memory': 'pinned host memory',
  'dataloader.persistent_workers': 'workers kept between epochs',
  'dataloader.batch_size': 'batch size',
  'cudnn.benchmark': 'cuDNN autotuning',
  'matmul.precision': 'float32 matmul precision',
  'optim.impl': 'optimizer implementation',
  'amp.dtype': 'mixed precision',
  'memory.channels_last': 'channels-last memory format',
  'compile.mode': 'compiled model (torch.compile)',
  'optim.set_to_none': 'gradients set to none',
  'copy.non_blocking': 'non-blocking copies to the GPU',
  'ddp.bucket_cap_mb': 'gradient bucket size (MB)',
  'ddp.gradient_as_bucket_view': 'gradients as views of the buckets',
  'ddp.static_graph': 'static graph for DDP',
};
export const SCRIPT_OVERRIDE_KEYS = Object.keys(SCRIPT_OVERRIDES) as ScriptOverrideKey[];
export type ScriptOverrides = Partial<{ [K in ScriptOverrideKey]: z.infer<(typeof SCRIPT_OVERRIDES)[K]> }>;

export const ScriptOverridesSchema = z
  .record(z.string(), z.union([z.number(), z.boolean(), z.string()]))
  .superRefine((value, ctx) => {
    for (const [key, v] of Object.entries(value)) {
      const schema = (SCRIPT_OVERRIDES as Record<string, z.ZodType>)[key];
      if (!schema) {
        ctx.addIssue({ code: 'custom', path: [key], message: `unknown override ${JSON.stringify(key)}; known keys: ${SCRIPT_OVERRIDE_KEYS.join(', ')}` });
      } else if (!schema.safeParse(v).success) {
        ctx.addIssue({ code: 'custom', path: [key], message: `bad value ${JSON.stringify(v)} for ${key}` });
      }
    }
  })
  .transform((v) => v as ScriptOverrides);

/** Parses one `key=value` from the command line into a typed override; the message names the bad part. */
export function parseOverride(text: string): { key: ScriptOverrideKey; value: string | number | boolean } {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new Error(`--set takes key=value, got ${JSON.stringify(text)}`);
  const key = text.slice(0, eq).trim();
  const raw = text.slice(eq + 1).trim();
  const schema = (SCRIPT_OVERRIDES as Record<string, z.ZodType>)[key];
  if (!schema) throw new Error(`unknown override ${JSON.stringify(key)}; known keys: ${SCRIPT_OVERRIDE_KEYS.join(', ')}`);
  const candidates: unknown[] = [raw];
  if (/^-?\d+$/.test(raw)) candidates.unshift(Number(raw));
  if (/^(true|false)$/i.test(raw)) candidates.unshift(raw.toLowerCase() === 'true');
  for (const c of candidates) if (schema.safeParse(c).success) return { key: key as ScriptOverrideKey, value: c as string | number | boolean };
  throw new Error(`bad value ${JSON.stringify(raw)} for ${key}: ${describeOverride(key as ScriptOverrideKey)}`);
}

/** What a key accepts, in words. */
export function describeOverride(key: ScriptOverrideKey): string {
  if (key === 'matmul.precision') return 'highest, high or medium';
  if (key === 'optim.impl') return 'foreach or fused';
  if (key === 'amp.dtype') return 'bf16 or fp16';
  if (key === 'compile.mode') return 'default, reduce-overhead or max-autotune';
  if (key === 'dataloader.pin_memory' || key === 'dataloader.persistent_workers' || key === 'cudnn.benchmark' || key === 'memory.channels_last' || key === 'optim.set_to_none' || key === 'copy.non_blocking') return 'true or false';
  if (key === 'ddp.gradient_as_bucket_view' || key === 'ddp.static_graph') return 'true or false';
  if (key === 'ddp.bucket_cap_mb') return 'a whole number of MB from 1 to 16384';
  return key === 'dataloader.num_workers' ? 'a whole number >= 0' : 'a whole number >= 1';
}

/**
 * A job across machines (issue 40): the address of this machine the other nodes reach. The probes' collector listens
 * there (on `port`, 0: one the kernel picks) instead of 127.0.0.1, and so does the hub the other nodes follow the
 * launches through (`trainbench join CODE`, the code printed once for the job).
 */
export const CollectorSchema = z
  .object({ host: z.string().min(1).max(255).regex(/^[\w.:-]+$/, 'a host name or IP address'), port: z.number().int().min(0).max(65535).default(0) })
  .strict();

/**
 * `10.0.0.1`, `10.0.0.1:29400`, `rig-a` or `[fd00::1]:29400` as a collector (port 0: the kernel picks one); throws
 * naming the value otherwise. The CLI's --collector and the app's field read it alike.
 */
export function parseCollector(value: string): z.infer<typeof CollectorSchema> {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([\w.-]+))(?::(\d{1,5}))?$/.exec(value.trim());
  const port = m?.[3] === undefined ? 0 : Number(m[3]);
  if (!m || port > 65535) throw new Error(`${JSON.stringify(value.slice(0, 80))} is not host[:port] (e.g. 10.0.0.1 or 10.0.0.1:29400)`);
  return { host: m[1] ?? m[2]!, port };
}

/** A job across machines: the code its other nodes follow every launch with, said once when the job opens its hub. */
export const ScriptJoinEventSchema = z.object({ jobId: z.string(), code: z.string().max(4096) });
export type ScriptJoinEvent = z.infer<typeof ScriptJoinEventSchema>;

/** What a person runs on each other node, with the code a job across machines said. */
export const joinLine = (code: string, command = '<its torchrun command>') => `trainbench join ${code} -- ${command}`;

export const ScriptBenchmarkRequestSchema = z
  .object({
    target: ScriptTargetSchema,
    overrides: ScriptOverridesSchema.default({}),
    /** Optimizer steps before the clock starts, in every launch. */
    warmupSteps: z.number().int().min(0).max(100_000).default(5),
    /** Measured steps, after which the probe ends the script; absent: the script runs to its own end. */
    steps: z.number().int().min(1).max(1_000_000).optional(),
    /** Launches of the command, each a fresh process. */
    repeat: z.number().int().min(1).max(100).default(3),
    /** Seconds one launch may take before it is killed with its process group. */
    timeoutSeconds: z.number().min(1).max(7 * 24 * 3600).default(600),
    /**
     * Time every rank at DDP's gradient all-reduces and name the straggler (issue 40): once a step, from the stamps
     * DDP's reducer keeps itself (bench/script/collectives_overhead.py measures what it costs).
     */
    collectives: z.boolean().default(false),
    /**
     * Time each gradient bucket instead, through a Python comm hook (implies `collectives`; torch 2 only): it also
     * measures the all-reduce bandwidth, but costs a bucket ~0.1 ms (17% of a 3.4 ms CPU step with 4 buckets on
     * torch 2.13), which slows a job of small steps.
     */
    collectivesPerBucket: z.boolean().default(false),
    /**
     * A job across machines (issue 40): the probes' collector listens on this address of this machine (one the other
     * nodes reach) instead of 127.0.0.1; the ranks there join with the code each launch announces.
     */
    collector: CollectorSchema.optional(),
    /**
     * Scaling efficiency (issue 40): after its launches, the job is launched once more on this node alone (torchrun's
     * --nnodes 1), and the result compares the two. Needs a torchrun command of more than one node.
     */
    oneNode: z.boolean().default(false),
    jobId: IdSchema.optional(),
  })
  .strict();
export type ScriptBenchmarkRequest = z.infer<typeof ScriptBenchmarkRequestSchema>;
export type ScriptBenchmarkRequestInput = z.input<typeof ScriptBenchmarkRequestSchema>;

/** One process that trained (a rank under torchrun), over its measured steps. */
export const ScriptRankSchema = z.object({
  rank: z.number().int(),
  pid: z.number().int(),
  steps: z.number().int(),
  measuredSteps: z.number().int(),
  /** Samples per step as the batches' tensors said (the last measured step's). */
  batchSize: z.number().int().nullable(),
  /**
   * Samples and batches of one optimizer step (the last measured step's): with gradient accumulation the batches
   * are its micro-batches, and the samples their sum. Null in runs recorded before they were kept.
   */
  samplesPerStep: z.number().int().nullable().default(null),
  batchesPerStep: z.number().int().nullable().default(null),
  samplesPerSec: z.number(),
  steadyStateMeanMs: z.number(),
  wallClockMeanMs: z.number(),
  /** Time blocked in the DataLoader's next(), per measured step, and its share of the step (percent). */
  dataWaitMs: z.number(),
  dataWaitPercent: z.number(),
  /** 'cuda-events' when any phase was timed on the GPU, else 'host-clock'. */
  timing: z.enum(['cuda-events', 'host-clock']),
  device: z.string(),
  cudaPeakBytes: z.number().nullable(),
  cudaTotalBytes: z.number().nullable(),
  hostPeakRssBytes: z.number().nullable(),
});
export type ScriptRank = z.infer<typeof ScriptRankSchema>;

export const ScriptAppliedSchema = z.object({ key: z.string(), value: z.union([z.number(), z.boolean(), z.string()]), where: z.string(), rank: z.number().int() });

/** Named as benchmark-training's result, so runs, reports and the wizard read either. */
export const ScriptFlopsSchema = z.object({
  forwardPerSample: z.number().nullable(),
  /** What activation checkpointing ran again in the backward, per sample (extra work, apart from the model's FLOPs); absent in older runs. */
  recomputePerSample: z.number().nullable().optional(),
  layers: z.number().int(),
  method: z.string(),
});
export type ScriptFlops = z.infer<typeof ScriptFlopsSchema>;

/**
 * The floors the hardware sets on a script's step (issue 26 item 3), as the engine's limits: arithmetic at torch's
 * measured matmul rate, one batch copied at the measured pinned copy rate, reading the data (not measured for a
 * script). Per rank and per optimizer step; a floor that could not be measured says why in its derivation.
 */
export const ScriptFloorsSchema = z.object({
  /** The measured steady-state step (ms) the floors are compared with (`baselineOverFloor` is this step over each). */
  stepMs: z.number(),
  compute: LimitSchema.extend({ trainingFlopsPerStep: z.number().nullable(), peakGflops: z.number().nullable(), peakShape: z.string().nullable() }),
  data: LimitSchema,
  copy: LimitSchema.extend({ bytesPerBatch: z.number().nullable(), gbPerSec: z.number().nullable() }),
  /** The highest floor: no setting of this script's pipeline can step faster. */
  floorStepMs: z.number().nullable(),
  summary: z.string(),
});
export type ScriptFloors = z.infer<typeof ScriptFloorsSchema>;


/** A line the script wrote, streamed live as `script.output`. */
export const ScriptOutputEventSchema = z.object({
  jobId: z.string(),
  runId: z.string().nullable(),
  repetition: z.number().int(),
  stream: z.enum(['stdout', 'stderr']),
  line: z.string(),
});
export type ScriptOutputEvent = z.infer<typeof ScriptOutputEventSchema>;

/** find-batch-size on a script target: dataloader.batch_size varied, an out-of-memory error is a data point. */
export const ScriptBatchSearchRequestSchema = z
  .object({
    target: ScriptTargetSchema,
    /** Other overrides every trial keeps; dataloader.batch_size is the one being searched. */
    overrides: ScriptOverridesSchema.default({}),
    /** The first batch tried; the search doubles from it up to the first OOM, then bisects. */
    startBatch: z.number().int().min(1).max(1 << 24).default(1),
    maxBatch: z.number().int().min(1).max(1 << 24).default(1 << 16),
    /** Share of the GPU's memory a fitting batch leaves free (CUDA only: on the CPU a batch fits when it trains). */
    headroom: z.number().min(0).max(0.9).default(0.1),
    warmupSteps: z.number().int().min(0).max(1000).default(2),
    stepsPerTrial: z.number().int().min(1).max(1000).default(5),
    timeoutSeconds: z.number().min(1).max(24 * 3600).default(600),
    /** Chosen by the caller so jobs.cancel can reach the search before its first trial ends; made up otherwise (it names the search's run). */
    jobId: IdSchema.optional(),
  })
  .strict();
export type ScriptBatchSearchRequest = z.infer<typeof ScriptBatchSearchRequestSchema>;
export type ScriptBatchSearchRequestInput = z.input<typeof ScriptBatchSearchRequestSchema>;


/** The settings of the first DataLoader the script made, as made (null: this torch has no such setting). */
export const ScriptLoaderSettingsSchema = z.object({
  num_workers: z.number().int().nullable(),
  prefetch_factor: z.number().int().nullable(),
  pin_memory: z.boolean().nullable(),
  persistent_workers: z.boolean().nullable(),
  batch_size: z.number().int().nullable(),
});
export type ScriptLoaderSettings = z.infer<typeof ScriptLoaderSettingsSchema>;

/** The optimisation wizard on a script target: candidate changes are the overrides; the batch size stays a recipe change. */
export const ScriptOptimiseRequestSchema = z
  .object({
    target: ScriptTargetSchema,
    /** The starting point: overrides the user runs with today (usually none). */
    overrides: ScriptOverridesSchema.default({}),
    preset: OptimisePresetSchema.default('balanced'),
    /** Launches of the baseline, and of each side of every trial (A/B/A/B interleaved). */
    repeat: z.number().int().min(2).max(50).default(5),
    steps: z.number().int().min(1).max(100_000).default(30),
    warmupSteps: z.number().int().min(0).max(10_000).default(5),
    maxTrials: z.number().int().min(0).max(100).default(8),
    allowRecipeChanges: z.boolean().default(false),
    /** Largest relative change of the mean loss over the measured steps a kept change may make (numerics changes: see the preset). */
    lossTolerance: z.number().gt(0).max(1).default(0.05),
    confounders: ConfounderPolicySchema.default('remeasure'),
    objective: WizardObjectiveSchema.default('throughput'),
    /** Only these overrides are tried (absent: every one the knob table offers), e.g. to try mixed precision alone. */
    only: z
      .array(z.string())
      .min(1)
      .superRefine((keys, ctx) => {
        for (const k of keys) if (!(k in SCRIPT_OVERRIDES)) ctx.addIssue({ code: 'custom', message: `unknown override ${JSON.stringify(k)}; known keys: ${SCRIPT_OVERRIDE_KEYS.join(', ')}` });
      })
      .transform((keys) => keys as ScriptOverrideKey[])
      .optional(),
    /** Seeds torch, random and numpy in every launch (unless the script seeds itself), so the loss of two launches compares. */
    seed: z.number().int().min(0).max(2 ** 31 - 1).default(0),
    timeoutSeconds: z.number().min(1).max(24 * 3600).default(600),
    /** Names the wizard's job (jobs.cancel stops it) and its run. */
    jobId: IdSchema.optional(),
    /**
     * The run of a stopped script optimisation of the same target to go on from: its baseline and finished
     * trials are kept (and its starting overrides), and the trials count towards maxTrials.
     */
    resumeFrom: IdSchema.optional(),
    /** A job across machines: every launch's other nodes follow through `trainbench join` (see CollectorSchema). */
    collector: CollectorSchema.optional(),
  })
  .strict();
export type ScriptOptimiseRequest = z.infer<typeof ScriptOptimiseRequestSchema>;
export type ScriptOptimiseRequestInput = z.input<typeof ScriptOptimiseRequestSchema>;

/**
 * A script wizard's baseline, sent as soon as it is measured: the wizard's result comes only at its
 * end, and a person watching its trials wants the numbers they are measured against.
 */
export const ScriptOptimiseBaselineEventSchema = z.object({
  /** The wizard's job. */
  jobId: z.string(),
  runId: z.string(),
  baseline: WizardBaselineSchema.extend({ overrides: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])) }),
  /** The script's own first DataLoader, before overrides; null when it made none. */
  loader: ScriptLoaderSettingsSchema.nullable(),
  /** The finished trials a resumed wizard keeps from the run it goes on from (none for a fresh one). */
  trials: z.array(OptimiseTrialSchema),
});
export type ScriptOptimiseBaselineEvent = z.infer<typeof ScriptOptimiseBaselineEventSchema>;

/** The longest a script run may be given: setTimeout's limit is about 24.8 days. */
export const MAX_SCRIPT_RUN_SECONDS = 24 * 24 * 3600;

/**
 * `train.run` on a script target: one whole training run of the user's command, recorded as a run
 * of kind `train` whose config.target is the script. No step bound unless maxSteps. Its result is
 * `train.run`'s one result (api/train-result.ts).
 */
export const ScriptTrainRequestSchema = z
  .object({
    target: ScriptTargetSchema,
    overrides: ScriptOverridesSchema.default({}),
    /** Optimizer steps after which the probe ends the script; absent: it trains to its own end. */
    maxSteps: z.number().int().min(1).max(1e12).optional(),
    /** Steps left out of the steady-state figures (the first steps compile, warm caches, start workers). */
    warmupSteps: z.number().int().min(0).max(1e9).default(5),
    /** The run is killed with its process group after this long. */
    timeoutSeconds: z.number().min(1).max(MAX_SCRIPT_RUN_SECONDS).default(7 * 24 * 3600),
    /** The job's id, which names its run too: chosen by the caller so it can follow its events and cancel it (jobs.cancel) from the start. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type ScriptTrainRequest = z.infer<typeof ScriptTrainRequestSchema>;
export type ScriptTrainRequestInput = z.input<typeof ScriptTrainRequestSchema>;
