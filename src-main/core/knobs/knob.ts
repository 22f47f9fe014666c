import type { Diagnosis, OptimiseChange, OptimiseConfig } from '../../api/optimise';
import type { ScriptLoaderSettings, ScriptOverrideKey, ScriptOverrides } from '../../api/script-target';

/** What a knob is: what it may change, and so which presets and guards apply to it. */
export type KnobKind = OptimiseChange['kind'];
/** What the wizard works on: our engine's configuration, or the user's script through the probe's overrides. */
export type KnobTarget = 'engine' | 'script';
export const KNOB_TARGETS: readonly KnobTarget[] = ['engine', 'script'];
export type Bound = Diagnosis['bound'];

/** Where the wizard runs our engine: what the knobs may be set to. */
export interface KnobContext {
  device: string;
  /** Logical cores of this machine: more loader workers than this only contend. */
  cpus: number;
  /** Records one epoch draws: no batch may exceed it. */
  recordsPerEpoch: number;
  /** The batch-size search's recommendation, when it ran and found one. */
  searchedBatch?: number | null;
}

/** Where the script runs: what the knobs may be set to. */
export interface ScriptKnobContext {
  device: string;
  /** Logical cores: more DataLoader worker processes than this only contend. */
  cpus: number;
  /** The script's own first DataLoader, before overrides (null: it made none). */
  loader: ScriptLoaderSettings | null;
  /** The script's first optimizer as made without optim.impl (null: none seen yet). */
  optimizer: ScriptOptimizerSeen | null;
  /** The models the script trains (outermost modules holding an optimizer's parameters); empty: none seen. */
  models: ScriptModelSeen[];
  /** The dtype the script's own autocast runs its training forward in (null: it does not autocast). */
  autocast: string | null;
  /** The script's torch version (null: not known yet). */
  torch: string | null;
  /** Whether the script's first zero_grad() dropped the gradients (null: none seen). */
  zeroGradToNone: boolean | null;
  /** The script's DistributedDataParallel model and the job's ranks (null: it made none). */
  ddp: ScriptDdpSeen | null;
  /** What bounds the step at the baseline: orders the knobs. */
  bound: ScriptBound;
}

/** A model the probe saw the script train: its class, its 2-D convolutions, and on CUDA whether the GPU computes bf16. */
export interface ScriptModelSeen {
  class: string;
  convs: number;
  /** null: not a CUDA device, or not known. */
  bf16: boolean | null;
}

/** The DistributedDataParallel model the probe saw the script make, as the script made it, and the job's ranks. */
export interface ScriptDdpSeen {
  bucketCapMb: number;
  gradientAsBucketView: boolean;
  staticGraph: boolean;
  /** Ranks in the job (WORLD_SIZE): one rank has no one to all-reduce with. */
  ranks: number;
}

/** An optimizer the probe saw the script make: its class, the implementations its torch offers, the one it uses. */
export interface ScriptOptimizerSeen {
  class: string;
  offers: ('foreach' | 'fused')[];
  impl: 'default' | 'foreach' | 'fused';
  /** The script's torch version, for a reason that names it. */
  torch: string | null;
}

/** A step a knob would take, in its own words; the table adds which setting it is and its kind. */
export interface Step {
  from: OptimiseChange['from'];
  to: OptimiseChange['to'];
  /** Absent: "<setting> <from> -> <to>". */
  label?: string;
  hypothesis: string;
  /** Recipe changes: what else has to change with it. */
  note?: string | null;
}

/**
 * A proposer's answer: a step to try; a step that does not apply here, and why (the wizard reports it
 * among the skipped changes); or why there is no further step (the knob is at its limit or already set:
 * nothing to report).
 */
export type Answer = { step: Step } | { skip: Step; why: string } | { settled: string };

/** The same answer as the wizard uses it, the step made a change of the target's setting. */
export type Proposal = { change: OptimiseChange } | { skip: OptimiseChange; why: string } | { settled: string };

/** A knob as our engine offers it. */
export interface EngineOffer {
  /** What a change names (OptimiseChange.knob): readFrom or one of the benchmark options. */
  setting: string;
  /** Place in the wizard's order, lower first, for what the diagnosis says bounds the step. */
  rank: Record<Bound, number>;
  /** Diagnosis findings whose number the hypothesis quotes, the first found first. */
  evidence: readonly string[];
  propose: (c: OptimiseConfig, ctx: KnobContext) => Answer;
}

/**
 * What bounds a script's step, from its baseline: the data wait (its DataLoader's next() over more than a
 * tenth of the step, the engine's diagnosis threshold), on a job of several ranks the all-reduces (the step waiting
 * in them after the last rank arrived), or the compute (forward, backward, optimizer).
 */
export type ScriptBound = 'data' | 'compute' | 'communication';

/** A knob as the probe offers it on a user's script. */
export interface ScriptOffer {
  setting: ScriptOverrideKey;
  /** Place in the script wizard's order, lower first, for what bounds the step: the loader first or the model first. */
  rank: Record<ScriptBound, number>;
  propose: (o: ScriptOverrides, ctx: ScriptKnobContext) => Answer;
  /**
   * Why a change of this setting alters which random streams the training draws from (the same seed then gives other
   * augmentations), where it does: its loss is judged against the loss's spread across streams, not with the same
   * seed (core/optimise/loss-streams.ts). Absent: with the same seed the training draws the same numbers.
   */
  randomStreams?: string;
}

/** A target that does not offer the knob says why. */
export interface NotOffered {
  notOffered: string;
}

/** One row of the knob table: a knob, declared once for every target. */
export interface Knob {
  /** Unique over the table. */
  name: string;
  kind: KnobKind;
  engine: EngineOffer | NotOffered;
  script: ScriptOffer | NotOffered;
}

export const offered = <T extends object>(offer: T | NotOffered): offer is T => !('notOffered' in offer);

/** The proposer's answer as a change of `setting`, stamped with the knob's kind. */
export function toProposal(setting: string, kind: KnobKind, answer: Answer): Proposal {
  const change = (s: Step): OptimiseChange => ({
    knob: setting,
    from: s.from,
    to: s.to,
    kind,
    label: s.label ?? `${setting} ${String(s.from)} -> ${String(s.to)}`,
    hypothesis: s.hypothesis,
    note: s.note ?? null,
  });
  if ('settled' in answer) return answer;
  if ('skip' in answer) return { skip: change(answer.skip), why: answer.why };
  return { change: change(answer.step) };
}

/** A script setting's value now: the override when set, else the script's own loader's, else torch's default. */
export function effective(o: ScriptOverrides, ctx: ScriptKnobContext) {
  return {
    workers: o['dataloader.num_workers'] ?? ctx.loader?.num_workers ?? 0,
    prefetch: o['dataloader.prefetch_factor'] ?? ctx.loader?.prefetch_factor ?? 2,
    pin: o['dataloader.pin_memory'] ?? ctx.loader?.pin_memory ?? false,
    persistent: o['dataloader.persistent_workers'] ?? ctx.loader?.persistent_workers ?? false,
    batch: o['dataloader.batch_size'] ?? ctx.loader?.batch_size ?? null,
    cudnnBenchmark: o['cudnn.benchmark'] ?? false,
    matmul: o['matmul.precision'] ?? 'highest',
  };
}
