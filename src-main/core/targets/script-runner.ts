import { ApiError } from '../../api/errors';
import type { OptimiseChange, OptimisePreset } from '../../api/optimise';
import type { ScriptLoaderSettings, ScriptOptimiseRequest, ScriptOverrides } from '../../api/script-target';
import type { ScriptKnobContext, ScriptOptimizerSeen } from '../knobs/knob';
import type { FinalWords } from '../optimise/final-verdict';
import type { RunRecord } from '../run-store';
import { probeDir } from '../script/probe-dir';
import type { RankSummary } from '../script/rank-stats';
import { combineRanks, summarizeRank } from '../script/rank-stats';
import type { ScriptJob, ScriptJobs } from '../script/script-jobs';
import { SCRIPT_KNOBS } from '../knobs/knob-table';
import { runTrial, trialError } from '../script/script-trial';
import type { Candidates, Repetition, TargetRunner } from './target-runner';

/** A launch of the user's command: throughput and its phases; the probe sees no loss. */
export interface ScriptRepetition extends Repetition {
  stepMs: number;
  phasesMs: ReturnType<typeof combineRanks>['phasesMs'];
  device: string;
  /** The script's own first DataLoader settings, those this launch overrode left out; null without one. */
  loader: ScriptLoaderSettings | null;
}

const LOADER_KEYS = ['num_workers', 'prefetch_factor', 'pin_memory', 'persistent_workers', 'batch_size'] as const;

/**
 * The user's command as the wizard's target: each repetition one launch with the probe's overrides,
 * stopped after the measured steps, its kill the job's cancel while it runs. Launches need not be
 * seeded, so there is no loss to compare: numerics changes are refused outside the max-speed preset.
 */
export class ScriptRunner implements TargetRunner<ScriptOverrides, ScriptRepetition> {
  readonly kind = 'script' as const;
  readonly unit = 'launch';
  private readonly dir = probeDir();
  private launches = 0;
  /** Known once the baseline is: the device, the cores and the script's own loader settings. */
  knobs: ScriptKnobContext | null = null;
  /** The script's own optimizer, from the first launch that did not set optim.impl (a resumed wizard learns it at its next one). */
  private optimizer: ScriptOptimizerSeen | null = null;

  constructor(
    private readonly request: ScriptOptimiseRequest,
    private readonly run: RunRecord,
    private readonly jobs: ScriptJobs,
    private readonly job: ScriptJob,
    /** Each line the script writes, with the launch (1-based, over the whole wizard) that wrote it. */
    private readonly onLine: (stream: 'stdout' | 'stderr', line: string, launch: number) => void,
  ) {}

  async measure(overrides: ScriptOverrides): Promise<ScriptRepetition> {
    const r = this.request;
    const n = ++this.launches;
    const trialOptions = { target: r.target, overrides, warmupSteps: r.warmupSteps, steps: r.steps, timeoutMs: r.timeoutSeconds * 1000, probeDir: this.dir };
    const record = await runTrial({
      ...trialOptions,
      onStarted: (cancel) => this.jobs.started(this.job, cancel),
      onLine: (stream, line) => this.onLine(stream, line, n),
    });
    this.job.cancel = null;
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
    const made = messages.find((m) => m.type === 'optimizer');
    if (made?.type === 'optimizer' && overrides['optim.impl'] === undefined) {
      this.optimizer ??= { class: made.class, offers: made.offers, impl: made.impl, torch: record.connections[0]?.hello.torch ?? null };
    }
    this.run.appendEvent({ type: 'optimise.launch', launch: n, overrides, samplesPerSec: combined.samplesPerSec, stepMs: combined.steadyStateMeanMs });
    // The script's own settings: those this launch overrode are not the script's.
    const loader = loaderMessage?.type === 'loader' ? { ...loaderMessage.settings } : null;
    if (loader) for (const key of LOADER_KEYS) if (overrides[`dataloader.${key}`] !== undefined) loader[key] = null;
    return { samplesPerSec: combined.samplesPerSec, loss: null, stepMs: combined.steadyStateMeanMs, phasesMs: combined.phasesMs, device: ranks[0].rank.device, loader };
  }

  apply(overrides: ScriptOverrides, change: OptimiseChange): ScriptOverrides {
    return { ...overrides, [change.knob]: change.to };
  }

  candidates(best: ScriptOverrides, exhausted: readonly string[]): Candidates | null {
    if (!this.knobs) return null;
    const ctx = { ...this.knobs, optimizer: this.knobs.optimizer ?? this.optimizer };
    const out: Candidates = { changes: [], skipped: [] };
    for (const knob of SCRIPT_KNOBS) {
      const p = knob(best, ctx);
      if ('skip' in p) out.skipped.push({ change: p.skip, why: p.why });
      else if ('change' in p && !exhausted.includes(p.change.knob)) out.changes.push(p.change);
    }
    return out;
  }

  refuses(change: OptimiseChange, preset: OptimisePreset): string | null {
    if (change.kind === 'numerics' && preset !== 'max-speed') {
      return `${change.label} alters the numerics, and the probe does not see a script's loss to guard it: only the max-speed preset tries it`;
    }
    return null;
  }

  words(kept: readonly string[]): FinalWords {
    return {
      subject: `The script with ${kept.join(', ')}`,
      unchanged: 'keep the script as it runs',
      allowRecipe: 'allow recipe changes (--allow-recipe-changes, or the box in the Optimise area)',
    };
  }
}
