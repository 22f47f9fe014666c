import { ApiError } from '../../../api/errors';
import type { OptimiseChange, TrialCompile } from '../../../api/optimise';
import type { ScriptLoaderSettings, ScriptOptimiseRequest, ScriptOverrideKey, ScriptOverrides } from '../../../api/script-target';
import type { Conditions, TelemetrySummary } from '../../../api/telemetry';
import type { ScriptKnobContext } from '../../knobs/knob';
import type { RunRecord } from '../../workspace/run-store';
import type { ProbeMessage } from '../../script/probe-messages';
import { repetitionEnergy } from '../../telemetry/energy';
import type { TelemetryService } from '../../telemetry/telemetry-service';
import { probeDir } from '../../script/launcher';
import type { RankSummary } from '../../script/rank-stats';
import { combineRanks, rankCollectives, summarizeRank } from '../../script/rank-stats';
import type { RunningJob, RunningJobs } from '../../jobs/running-jobs';
import { scriptProposals, scriptRandomStreams } from '../../knobs/knob-table';
import type { TrialRecord } from '../../script/measured-launch';
import { trialError } from '../../script/measured-launch';
import { launchMeasured } from '../../script/measured-launch';
import { otherNodes } from '../../nodes/followers';
import { median } from '../../stats/medians';
import type { Candidates, FinalWords, Repetition, WizardTarget } from '../target-runner';

/** A launch of the user's command: throughput, its phases, and the mean loss over its measured steps. */
export interface ScriptRepetition extends Repetition {
  stepMs: number;
  phasesMs: ReturnType<typeof combineRanks>['phasesMs'];
  device: string;
  /** The script's own first DataLoader settings, those this launch overrode left out; null without one. */
  loader: ScriptLoaderSettings | null;
  /** With compile.mode: what dynamo compiled in this launch (rank 0). */
  compile: { seconds: number; compilations: number; inMeasuredSteps: number } | null;
  /** What else the machine did over the measured steps; null without telemetry. */
  conditions: Conditions | null;
  /** A job of several ranks: the step's share waiting in all-reduces after the last rank arrived, and its straggler. */
  collectives: { exposedShare: number; straggler: number | null; phase: 'data' | 'compute' | 'host' | null } | null;
}


const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** What the knobs know from the probe's messages, as the script is; the rest of their context comes with the baseline. */
type ProbeSeen = 'optimizer' | 'models' | 'autocast' | 'torch' | 'zeroGradToNone' | 'ddp';

const LOADER_KEYS = ['num_workers', 'prefetch_factor', 'pin_memory', 'persistent_workers', 'batch_size'] as const;

export { LAUNCH_TELEMETRY_MS } from '../../script/measured-launch';

/** Two launches of the same settings whose mean losses differ by more than this (relative) do not reproduce it. */
const REPEAT_LOSS_TOLERANCE = 1e-3;

/** The probe moves every seed a launch sets, the wizard's and the script's own, by this variable's value (loss-streams.ts). */
const SEED_STREAM_ENV = 'TB_PROBE_SEED_STREAM';

/**
 * The user's command as the wizard's target: each repetition one launch with the probe's overrides,
 * stopped after the measured steps, its kill the job's cancel while it runs. Every launch is seeded
 * with the wizard's seed (the script's own seeding wins), and its loss is the mean of the losses the
 * probe read over the measured steps; when two launches of the same settings disagree, the loss
 * guards nothing and the wizard says that a change was kept without a loss check.
 */
export class ScriptLaunches implements WizardTarget<ScriptOverrides, ScriptRepetition> {
  readonly kind = 'script' as const;
  readonly unit = 'launch';
  private readonly dir = probeDir();
  private launches = 0;
  /** Known once the baseline is: the device, the cores and the script's own loader settings. */
  knobs: Omit<ScriptKnobContext, ProbeSeen> | null = null;
  /**
   * What the probe saw of the script as it is: its optimizer (from a launch without optim.impl), its models, and its own
   * autocast (from a launch without amp.dtype). A resumed wizard learns them at its next launch.
   */
  private seen: Pick<ScriptKnobContext, ProbeSeen> = { optimizer: null, models: [], autocast: null, torch: null, zeroGradToNone: null, ddp: null };
  /** The first mean loss of each settings measured (by their JSON), to see whether a repeat reproduces it. */
  private readonly lossOf = new Map<string, number>();
  /** Why the loss cannot be compared; null while it can. */
  private unchecked: string | null = null;
  /** The seed the script gave torch.manual_seed first, in the first launch that seeded: a later launch's must match. */
  private scriptSeed: { seed: number | null; launch: number } | null = null;
  /** Who seeded the launches: the script itself (where), or Trainbench with the request's seed. */
  seededBy: { by: 'trainbench' | 'script'; where: string } | null = null;

  constructor(
    private readonly request: ScriptOptimiseRequest,
    private readonly run: RunRecord,
    private readonly jobs: RunningJobs,
    private readonly job: RunningJob,
    /** Each line the script writes, with the launch (1-based, over the whole wizard) that wrote it. */
    private readonly onLine: (stream: 'stdout' | 'stderr', line: string, launch: number) => void,
    /** Watches each launch's measured window for what else the machine did (confounders); none: not watched. */
    private readonly telemetry: TelemetryService | null = null,
    /** A job across machines: the code its other nodes follow the launches with, said once. */
    onJoin?: (code: string) => void,
  ) {
    this.nodes = otherNodes(request.collector, onJoin);
  }

  /** The job's other nodes (none without a collector): they start their part with every launch. */
  private readonly nodes: ReturnType<typeof otherNodes>;

  /** The wizard ended: the other nodes' `trainbench join` ends too. */
  close(): void {
    this.nodes.close();
  }

  /**
   * One launch; on random stream `stream` (every seed it sets moved by it, the script's own too) where that is not 0.
   */
  async measure(overrides: ScriptOverrides, stream = 0): Promise<ScriptRepetition> {
    const r = this.request;
    const n = ++this.launches;
    // The stream travels in the command's environment: measured-launch.ts has no option for it (yet).
    const target = stream === 0 ? r.target : { ...r.target, env: { ...r.target.env, [SEED_STREAM_ENV]: String(stream) } };
    const nodes = r.collector ? { collector: r.collector, followers: await this.nodes.open() } : {};
    // A job of several ranks is timed at its all-reduces in every launch, both sides of a pair alike (~0.2-0.3 ms a
    // step): the baseline's say whether communication bounds it. A single process is not timed (the probe sees one rank).
    const trialOptions = { target, overrides, warmupSteps: r.warmupSteps, steps: r.steps, timeoutMs: r.timeoutSeconds * 1000, probeDir: this.dir, seed: r.seed, timeCollectives: 'step' as const, ...nodes };
    const telemetryService = this.telemetry;
    let record: TrialRecord;
    let telemetry: TelemetrySummary | null;
    try {
      ({ record, telemetry } = await launchMeasured({
        ...trialOptions,
        // The window watches the launch's measured steps for what else the machine did (confounders).
        window: telemetryService ? { telemetry: telemetryService, open: () => this.run.stream(`telemetry-launch${n}.jsonl`, { append: true }) } : null,
        onStarted: (cancel) => this.jobs.started(this.job, cancel),
        onLine: (stream, line) => this.onLine(stream, line, n),
      }));
    } catch (err) {
      this.job.cancel = null;
      throw err;
    }
    this.job.cancel = null;
    const conditions = telemetry?.conditions ?? null;
    const error = trialError(record, trialOptions);
    if (error) throw error;
    const ranks = record.connections.map((c) => summarizeRank(c, r.warmupSteps, r.steps)).filter((x): x is RankSummary => x !== null);
    if (ranks.length === 0) throw new ApiError('E_SCRIPT', `launch ${n} measured no step after the ${r.warmupSteps} warm-up step(s): the script ended too early`);
    const combined = combineRanks(ranks);
    // The wizard compares samples/s; a script that makes no DataLoader gives the probe no batch to count.
    if (!(combined.samplesPerSec > 0)) {
      throw new ApiError(
        'E_SCRIPT',
        `launch ${n} counted no samples: the probe counts the samples in the batches a torch DataLoader yields, and this script trained without one, so there is no samples/s to compare`,
      );
    }
    const messages = record.connections.flatMap((c) => c.messages);
    const loaderMessage = messages.find((m) => m.type === 'loader');
    // Rank 0's process speaks for the launch (connections come in the order the ranks connected).
    const first = record.connections.find((c) => c.hello.rank === 0) ?? record.connections[0];
    this.see(messages, overrides, first?.hello.torch ?? null, first?.hello.worldSize ?? 1);
    this.run.appendEvent({ type: 'optimise.launch', launch: n, overrides, ...(stream !== 0 ? { stream } : {}), samplesPerSec: combined.samplesPerSec, stepMs: combined.steadyStateMeanMs });
    // The script's own settings: those this launch overrode are not the script's.
    const loader = loaderMessage?.type === 'loader' ? { ...loaderMessage.settings } : null;
    if (loader) for (const key of LOADER_KEYS) if (overrides[`dataloader.${key}`] !== undefined) loader[key] = null;
    const loss = this.lossOfLaunch(n, overrides, stream, first?.messages ?? []);
    const compiled = first?.messages.find((m) => m.type === 'compile');
    const compile = compiled?.type === 'compile' ? { seconds: compiled.seconds, compilations: compiled.compilations, inMeasuredSteps: compiled.inMeasuredSteps } : null;
    const device = ranks[0].rank.device;
    const energy = telemetry ? repetitionEnergy(telemetry, combined.samplesPerSec, device) : { samplesPerJoule: null, energyMissing: 'no telemetry was recorded over the launch' };
    const c = rankCollectives(record.connections, r.warmupSteps, r.steps);
    const collectives = c ? { exposedShare: c.exposedShare, straggler: c.straggler, phase: c.phase } : null;
    return { samplesPerSec: combined.samplesPerSec, loss, stepMs: combined.steadyStateMeanMs, phasesMs: combined.phasesMs, device, loader, compile, conditions, collectives, ...energy };
  }

  /**
   * The launch's mean loss over its measured steps (rank 0's; Infinity where one was not finite), or null where
   * it cannot be compared: then `unchecked` says why, for every trial from here on. Launches repeat each other when
   * their settings and their random stream are the same.
   */
  private lossOfLaunch(n: number, overrides: ScriptOverrides, stream: number, messages: ProbeMessage[]): number | null {
    const r = this.request;
    const seed = messages.find((m) => m.type === 'seed' && m.by === 'script') ?? messages.find((m) => m.type === 'seed');
    if (seed?.type === 'seed') this.seededBy ??= { by: seed.by, where: seed.where };
    if (this.unchecked !== null) return null;
    // A script that draws its own seed (from the clock or os.urandom) never repeats a launch; its mean losses can
    // still agree by chance, so the seed it passed is compared, not only the losses.
    if (seed?.type === 'seed' && seed.by === 'script') {
      if (this.scriptSeed === null) this.scriptSeed = { seed: seed.seed, launch: n };
      else if (seed.seed !== this.scriptSeed.seed) {
        const said = (s: number | null) => (s === null ? 'a seed that is not an integer' : String(s));
        this.unchecked = `the script seeds torch with a different value in each launch (${said(this.scriptSeed.seed)} in launch ${this.scriptSeed.launch}, ${said(seed.seed)} in launch ${n}, at ${seed.where}), so two launches of the same settings do not repeat each other`;
        return null;
      }
    }
    const values: (number | null)[] = [];
    for (const m of messages) {
      if (m.type !== 'loss') continue;
      m.steps.forEach((step, i) => {
        if (step > r.warmupSteps && step <= r.warmupSteps + r.steps) values.push(m.values[i]);
      });
    }
    if (values.length === 0) {
      this.unchecked = `launch ${n} gave the probe no loss over its measured steps (it reads the scalar passed to backward())`;
      return null;
    }
    const loss = values.some((v) => v === null) ? Infinity : mean(values as number[]);
    const key = JSON.stringify([stream, Object.entries(overrides).sort(([a], [b]) => a.localeCompare(b))]);
    const first = this.lossOf.get(key);
    if (first === undefined) this.lossOf.set(key, loss);
    else if (Number.isFinite(first) && Number.isFinite(loss) && Math.abs(loss - first) > REPEAT_LOSS_TOLERANCE * Math.max(Math.abs(first), 1e-12)) {
      this.unchecked = `two launches of the same settings gave mean losses ${first.toPrecision(6)} and ${loss.toPrecision(6)} with the same seed${stream !== 0 ? ` (random stream ${stream})` : ''} (the script's data order or its kernels are not deterministic)`;
      return null;
    }
    return loss;
  }

  lossUnchecked(): string | null {
    return this.unchecked;
  }

  /** Why a change alters which random streams the script's training draws from (the knob table says), or null. */
  randomStreams(change: OptimiseChange): string | null {
    return scriptRandomStreams(change.knob);
  }

  /**
   * A compile trial's compile time and pay-off: the median compile seconds of its measured launches (their caches
   * warm) and the first launch's (cold, before the pairs), each over the step time saved (the best's mean step less
   * the candidate's); and the recompilations its measured steps paid for.
   */
  trialExtras(change: OptimiseChange, best: readonly ScriptRepetition[], candidate: readonly ScriptRepetition[], warmUp: ScriptRepetition | null): { why: string; compile: TrialCompile } | null {
    const runs = candidate.flatMap((c) => (c.compile ? [c.compile] : []));
    if (change.knob !== 'compile.mode' || runs.length === 0 || best.length === 0) return null;
    const seconds = median(runs.map((c) => c.seconds));
    const compilations = Math.max(...runs.map((c) => c.compilations));
    const inMeasuredSteps = Math.max(...runs.map((c) => c.inMeasuredSteps));
    const savedMs = mean(best.map((b) => b.stepMs)) - mean(candidate.map((c) => c.stepMs));
    const payoff = (s: number) => (savedMs > 0 ? Math.max(1, Math.ceil((s * 1000) / savedMs)) : null);
    const payoffSteps = payoff(seconds);
    const cold = warmUp?.compile ?? null;
    const coldPayoffSteps = cold ? payoff(cold.seconds) : null;
    const steps = (n: number) => n.toLocaleString('en-US');
    const paid = cold
      ? `compiling took ${cold.seconds.toFixed(1)} s in the first launch (caches cold, before the measured pairs) and ${seconds.toFixed(1)} s in each measured launch (${compilations} compilation${compilations === 1 ? '' : 's'}, at its first steps)`
      : `compiling took ${seconds.toFixed(1)} s per launch (${compilations} compilation${compilations === 1 ? '' : 's'}, at its first steps)`;
    const pays =
      payoffSteps === null
        ? 'the compiled step is not faster, so it never pays off'
        : cold && coldPayoffSteps !== null
          ? `at ${savedMs.toFixed(2)} ms saved per step it pays off after ${steps(coldPayoffSteps)} steps from cold, ${steps(payoffSteps)} once the caches are warm`
          : `at ${savedMs.toFixed(2)} ms saved per step it pays off after ${steps(payoffSteps)} steps`;
    const recompiled = inMeasuredSteps > 0 ? `; ${inMeasuredSteps} recompilation${inMeasuredSteps === 1 ? '' : 's'} fell in the measured steps, and their time is in the speedup` : '';
    const coldPart = cold ? { coldSeconds: cold.seconds, coldPayoffSteps } : {};
    return { why: `${paid}; ${pays}${recompiled}`, compile: { seconds, compilations, inMeasuredSteps, payoffSteps, ...coldPart } };
  }

  /** A compile trial's first launch fills the compile caches: run before its pairs, so no pair holds a cold compile. */
  warmUp(candidate: ScriptOverrides, change: OptimiseChange): Promise<ScriptRepetition> | null {
    return change.knob === 'compile.mode' ? this.measure(candidate) : null;
  }

  private see(messages: ProbeMessage[], overrides: ScriptOverrides, torch: string | null, ranks: number): void {
    const seen = this.seen;
    seen.torch ??= torch;
    for (const m of messages) {
      // The ddp message says the script's own settings, before any ddp.* override.
      if (m.type === 'ddp') seen.ddp ??= { bucketCapMb: m.bucketCapMb, gradientAsBucketView: m.gradientAsBucketView, staticGraph: m.staticGraph, ranks };
      if (m.type === 'optimizer' && overrides['optim.impl'] === undefined) seen.optimizer ??= { class: m.class, offers: m.offers, impl: m.impl, torch };
      if (m.type === 'autocast' && overrides['amp.dtype'] === undefined) seen.autocast ??= m.dtype;
      if (m.type === 'zeroGrad' && overrides['optim.set_to_none'] === undefined) seen.zeroGradToNone ??= m.setToNone;
    }
    if (!seen.models.length) seen.models = messages.flatMap((m) => (m.type === 'model' ? [{ class: m.class, convs: m.convs, bf16: m.bf16 ?? null }] : []));
  }

  apply(overrides: ScriptOverrides, change: OptimiseChange): ScriptOverrides {
    return { ...overrides, [change.knob]: change.to };
  }

  candidates(best: ScriptOverrides, exhausted: readonly string[]): Candidates | null {
    if (!this.knobs) return null;
    const ctx: ScriptKnobContext = { ...this.knobs, ...this.seen };
    const out: Candidates = { changes: [], skipped: [] };
    const only = this.request.only;
    for (const p of scriptProposals(best, ctx)) {
      if (only && !('settled' in p) && !only.includes(('change' in p ? p.change : p.skip).knob as ScriptOverrideKey)) continue;
      if ('skip' in p) out.skipped.push({ change: p.skip, why: p.why });
      else if ('change' in p && !exhausted.includes(p.change.knob)) out.changes.push(p.change);
    }
    return out;
  }

  refuses(): string | null {
    return null; // the preset's rules and the loss guard decide; nothing is refused for being a script
  }

  words(kept: readonly string[]): FinalWords {
    return {
      subject: `The script with ${kept.join(', ')}`,
      unchanged: 'keep the script as it runs',
      allowRecipe: 'allow recipe changes (--allow-recipe-changes, or the box in the Optimise area)',
    };
  }
}
