import { TrainingBenchmarkRequestSchema } from '../../../api/benchmark';
import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import { partId } from '../../../api/ids';
import type { Diagnosis, OptimiseChange, OptimiseConfig, OptimiseRequest } from '../../../api/optimise';
import type { EngineBenchmarks, MeasuredRepetition, PreparedBenchmark } from './engine-benchmark';
import type { RunningJob } from '../../jobs/running-jobs';
import type { KnobContext } from '../../knobs/knob';
import { applyChange, candidateChanges } from '../../knobs/engine-knobs';
import { configKey } from './resumable-run';
import { meanLoss } from '../../stats/benchmark-summary';
import type { RunRecord } from '../../workspace/run-store';
import { repetitionEnergy } from '../../telemetry/energy';
import type { Candidates, FinalWords, Repetition, WizardTarget } from '../target-runner';

/** A repetition of our engine: throughput and loss for the wizard, the full measurement for the baseline's phases. */
export interface EngineRepetition extends Repetition {
  measured: MeasuredRepetition;
}

/** The benchmark request that measures one configuration of the engine target, one repetition at a time. */
export function engineBenchmarkRequest(request: OptimiseRequest, config: OptimiseConfig) {
  const parsed = TrainingBenchmarkRequestSchema.safeParse({
    spec: request.target.spec,
    data: request.target.data,
    options: config.options,
    warmupSteps: request.warmupSteps,
    steps: request.steps,
    repeat: 1,
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad optimisation target: ${formatIssues(parsed.error, 'target')}`);
  return parsed.data;
}

const WORDS: FinalWords = {
  subject: 'The final configuration',
  unchanged: 'keep the baseline configuration',
  allowRecipe: 'allow recipe changes (--allow-recipe-changes, or the box in the Optimise area)',
};

/**
 * Our engine as the wizard's target: each repetition a fresh trainer on the prepared data, recorded
 * into the wizard's run; the knobs ordered by the baseline's diagnosis. It sees the loss, so the
 * wizard's loss guard applies to every change.
 */
export class EngineRepetitions implements WizardTarget<OptimiseConfig, EngineRepetition> {
  readonly kind = 'engine' as const;
  readonly unit = 'repetition';
  private readonly prepared = new Map<string, PreparedBenchmark>();
  private count = 0;
  /** Known once the baseline is: what orders and bounds the knobs. */
  knobs: { diagnosis: Diagnosis; ctx: KnobContext } | null = null;

  constructor(
    private readonly benchmarks: EngineBenchmarks,
    private readonly request: OptimiseRequest,
    private readonly run: RunRecord,
    private readonly job: RunningJob,
    private readonly allowPathsOutsideWorkspace: boolean | undefined,
  ) {}

  /** Drops every prepared configuration: the request's steps changed (widenSteps), and a preparation holds them. */
  forgetPrepared(): void {
    this.prepared.clear();
  }

  /** The data and the engine options for a configuration, prepared once per configuration. */
  async prepare(config: OptimiseConfig): Promise<PreparedBenchmark> {
    const key = configKey(config);
    let p = this.prepared.get(key);
    if (!p) {
      p = await this.benchmarks.prepare(engineBenchmarkRequest(this.request, config), { allowPathsOutsideWorkspace: this.allowPathsOutsideWorkspace, readFrom: config.readFrom });
      this.prepared.set(key, p);
    }
    return p;
  }

  async measure(config: OptimiseConfig): Promise<EngineRepetition> {
    const prepared = await this.prepare(config);
    // Preparing a configuration (its data read in place, say) can take a while: a cancel meanwhile stops here.
    if (this.job.cancelled) throw new ApiError('E_CANCELLED', 'the optimisation was cancelled while a configuration was prepared');
    const n = ++this.count;
    const measured = await this.benchmarks.repetition(n, prepared, this.run, this.job, partId(this.run.id, `r${n}`));
    const r = measured.repetition;
    const energy = repetitionEnergy(r.telemetry, r.samplesPerSec, r.target.memory.device ?? config.options.device);
    return { samplesPerSec: r.samplesPerSec, loss: meanLoss(measured.steps), conditions: r.telemetry.conditions ?? null, ...energy, measured };
  }

  apply(config: OptimiseConfig, change: OptimiseChange): OptimiseConfig {
    return applyChange(config, change);
  }

  candidates(best: OptimiseConfig, exhausted: readonly string[]): Candidates | null {
    return this.knobs ? candidateChanges(best, this.knobs.diagnosis, this.knobs.ctx, exhausted) : null;
  }

  /** The engine measures the loss under one seed: the preset's loss tolerance guards every change. */
  refuses(): string | null {
    return null;
  }

  words(): FinalWords {
    return WORDS;
  }
}
