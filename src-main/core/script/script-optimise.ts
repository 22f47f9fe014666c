import os from 'node:os';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { OptimiseChange, OptimiseProgress, OptimiseTrial, SkippedChange } from '../../api/optimise';
import type { ScriptLoaderSettings, ScriptOptimiseRecord, ScriptOptimiseRequest, ScriptOptimiseResult, ScriptOverrides } from '../../api/script-target';
import { ScriptOptimiseResultSchema } from '../../api/script-target';
import { phaseShares } from '../benchmarks/benchmark-summary';
import type { EventHub } from '../event-hub';
import type { FinalWords } from '../optimise/final-verdict';
import { wizardEta } from '../optimise/eta';
import { measuredVerdict, unchangedVerdict } from '../optimise/final-verdict';
import { decideTrial, noiseFloor, pairedSpeedup } from '../optimise/trial-decision';
import { PRESETS } from '../optimise/presets';
import type { RunRecord } from '../run-store';
import { createRun } from '../run-store';
import { medianInterval } from '../stats/bootstrap';
import type { Workspace } from '../workspace';
import { probeDir } from './probe-dir';
import type { RankSummary } from './rank-stats';
import { combineRanks, summarizeRank } from './rank-stats';
import { commandText } from './script-benchmark';
import type { ScriptJob } from './script-jobs';
import { ScriptJobs } from './script-jobs';
import type { ScriptKnobContext } from './script-knobs';
import { SCRIPT_KNOBS } from './script-knobs';
import { loadScriptWizardState, replayTrials, saveScriptWizardState } from './script-optimise-resume';
import { runTrial, trialError } from './script-trial';

export interface ScriptOptimiseOptions {
  onProgress?: (p: OptimiseProgress) => void;
  /** Each line the script writes, with the launch (1-based, over the whole wizard) that wrote it. */
  onOutput?: (stream: 'stdout' | 'stderr', line: string, launch: number) => void;
  /** The registry the wizard's job joins, so `script.cancel` (or the CLI's Ctrl-C) stops it; a private one when absent. */
  jobs?: ScriptJobs;
}

const apply = (o: ScriptOverrides, c: OptimiseChange): ScriptOverrides => ({ ...o, [c.knob]: c.to });

type Baseline = ScriptOptimiseResult['baseline'];

interface Measured {
  samplesPerSec: number;
  stepMs: number;
  phasesMs: ReturnType<typeof combineRanks>['phasesMs'];
  device: string;
  loader: ScriptLoaderSettings | null;
}

/**
 * The optimisation wizard (ADR 0012's rules) on a user's command: a baseline of
 * `repeat` launches, then one override at a time on top of the current best,
 * measured A/B/A/B and kept only when its paired speedup beats the noise. The
 * probe sees no loss, so a change to numerics has no loss guard: only the
 * max-speed preset tries one. The batch size is a recipe change: proposed,
 * kept only when allowed.
 *
 * The wizard is one script job: cancelling it kills the launch in flight; the
 * run is recorded cancelled (or failed) with what it had measured, so the
 * finished trials of a stopped wizard are not lost (ScriptOptimiseRecord).
 */
export async function optimiseScript(workspace: Workspace, events: EventHub, request: ScriptOptimiseRequest, options: ScriptOptimiseOptions = {}): Promise<ScriptOptimiseResult> {
  const started = Date.now();
  const jobs = options.jobs ?? new ScriptJobs();
  const job = jobs.open(request.jobId, 'script optimisation');
  try {
    // Checked before a run is created: a refused resume records nothing.
    const resumed = request.resumeFrom ? await loadScriptWizardState(workspace, request.resumeFrom, request) : null;
    const run = await createRun(workspace, 'optimise', { target: request.target, request, jobId: job.id });
    const wizard = new ScriptWizard(request, run, events, options, started, jobs, job, resumed);
    try {
      const result = await wizard.go();
      await run.finish('completed', { result });
      return result;
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      const n = wizard.finishedTrials;
      const kept = `${n} finished trial${n === 1 ? '' : 's'}`;
      const resume = `go on with trainbench optimise-script --resume ${run.id}`;
      const stopped =
        e.code === 'E_CANCELLED' ? new ApiError('E_CANCELLED', `the script optimisation was cancelled after ${kept}; its run ${run.relativeDir} keeps what it measured (${e.message}); ${resume}`) : e;
      await run.finish(e.code === 'E_CANCELLED' ? 'cancelled' : 'failed', { result: wizard.record(), error: stopped.toPayload() });
      throw stopped;
    }
  } finally {
    jobs.close(job);
  }
}

class ScriptWizard {
  private launches = 0;
  private readonly dir = probeDir();
  private readonly trials: OptimiseTrial[] = [];
  private baseline: Baseline | null = null;
  private loader: ScriptLoaderSettings | null = null;
  /** Seconds each finished launch took, for the ETA. */
  private readonly launchSeconds: number[] = [];
  /** Where the search stands, for the ETA's count of trials left: set once the baseline is known. */
  private search: { best: ScriptOverrides; exhausted: Set<string>; ctx: ScriptKnobContext } | null = null;

  constructor(
    private readonly request: ScriptOptimiseRequest,
    private readonly run: RunRecord,
    private readonly events: EventHub,
    private readonly options: ScriptOptimiseOptions,
    private readonly started: number,
    private readonly jobs: ScriptJobs,
    private readonly job: ScriptJob,
    /** What the run this one resumes had measured; null for a fresh wizard. */
    private readonly resumed: ScriptOptimiseRecord | null,
  ) {}

  get finishedTrials(): number {
    return this.trials.length;
  }

  /** What the wizard measured so far, for the run of one that stopped early (no final). */
  record(): ScriptOptimiseRecord {
    return { ...this.head(), skipped: [], final: null };
  }

  /** The fields a finished and a stopped wizard share. */
  private head() {
    const r = this.request;
    return {
      runId: this.run.id,
      runDir: this.run.relativeDir,
      title: commandText(r.target),
      target: r.target,
      preset: r.preset,
      repeat: r.repeat,
      loader: this.loader,
      baseline: this.baseline,
      trials: this.trials,
      seconds: (Date.now() - this.started) / 1000,
    };
  }

  async go(): Promise<ScriptOptimiseResult> {
    const r = this.request;
    const k = r.repeat;
    // A resumed wizard keeps the baseline and the trials it had; one stopped before its baseline starts over.
    const restored = this.resumed?.baseline ? { ...this.resumed, baseline: this.resumed.baseline } : null;
    if (restored) {
      this.baseline = restored.baseline;
      this.loader = restored.loader;
      this.trials.push(...restored.trials);
    } else {
      await this.measureBaseline();
    }
    const baseline = this.baseline!;
    const start = baseline.overrides as ScriptOverrides;
    const baseSamples = baseline.repetitions;
    const floor = baseline.noiseFloor;
    const ctx: ScriptKnobContext = { device: baseline.device, cpus: os.cpus().length, loader: this.loader };
    this.events.emit('script.optimiseBaseline', { jobId: this.job.id, runId: this.run.id, baseline, loader: this.loader, trials: [...this.trials] });
    await this.saveState();

    let { best, exhausted } = replayTrials(start, this.trials);
    this.search = { best, exhausted, ctx };
    for (let change = this.next(best, ctx, exhausted); change && this.trials.length < r.maxTrials; change = this.next(best, ctx, exhausted)) {
      const trial = await this.trial(this.trials.length + 1, best, change, floor);
      this.trials.push(trial);
      this.run.appendEvent({ type: 'optimise.trial', trial });
      await this.saveState();
      if (trial.kept) {
        best = apply(best, change);
        exhausted = new Set();
      } else {
        exhausted.add(change.knob);
      }
      this.search = { best, exhausted, ctx };
      this.progress('trial', trial.index, k, k, change.label, trial);
    }

    const skipped: SkippedChange[] = [];
    for (const knob of SCRIPT_KNOBS) {
      const p = knob(best, ctx);
      if (p && 'skip' in p) skipped.push({ change: p.skip, why: p.why });
      else if (p && 'change' in p && !this.trials.some((t) => t.change.knob === p.change.knob)) {
        const refused = this.refusal(p.change) ?? (this.trials.length >= r.maxTrials ? `not tried: the wizard stopped after --max-trials ${r.maxTrials}` : null);
        if (refused) skipped.push({ change: p.change, why: refused });
      }
    }

    const final = await this.final(start, best, baseSamples, floor);
    const result = { ...this.head(), skipped, final };
    this.progress('done', null, 0, 0, null, null);
    const parsed = ScriptOptimiseResultSchema.safeParse(result);
    if (!parsed.success) throw new ApiError('E_INTERNAL', `the script optimisation result does not match the contract: ${formatIssues(parsed.error, 'result')}`);
    return parsed.data;
  }

  /** `repeat` launches of the starting overrides: the samples every trial's gain is judged against. */
  private async measureBaseline(): Promise<void> {
    const r = this.request;
    const base: Measured[] = [];
    for (let i = 0; i < r.repeat; i++) {
      base.push(await this.measure(r.overrides));
      this.progress('baseline', null, i + 1, r.repeat, null, null);
    }
    const samples = base.map((m) => m.samplesPerSec);
    this.loader = base[0].loader;
    const meanOf = (pick: (m: Measured) => number) => base.reduce((s, m) => s + pick(m), 0) / base.length;
    const phasesMs = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0 };
    for (const key of Object.keys(phasesMs) as (keyof typeof phasesMs)[]) phasesMs[key] = meanOf((m) => m.phasesMs[key]);
    this.baseline = {
      overrides: r.overrides,
      samplesPerSec: medianInterval(samples),
      repetitions: samples,
      noiseFloor: noiseFloor(samples),
      stepMs: meanOf((m) => m.stepMs),
      phasesMs,
      phasesPercent: phaseShares(phasesMs),
      device: base[0].device,
    };
  }

  /** After the baseline and every trial: a killed wizard loses only the trial in flight (see resumeFrom). */
  private saveState(): Promise<void> {
    return saveScriptWizardState(this.run, this.record());
  }

  /** Why the preset (or the missing loss guard) keeps a change from being tried, or null. */
  private refusal(change: OptimiseChange): string | null {
    const byPreset = PRESETS[this.request.preset].refuses(change);
    if (byPreset) return byPreset;
    if (change.kind === 'numerics' && this.request.preset !== 'max-speed') {
      return `${change.label} alters the numerics, and the probe does not see a script's loss to guard it: only the max-speed preset tries it`;
    }
    return null;
  }

  /** Changes still open (proposed, not exhausted, not refused), within the trial budget; the budget before the baseline. */
  private trialsLeft(): number {
    const budget = Math.max(0, this.request.maxTrials - this.trials.length);
    if (!this.search) return budget;
    const { best, exhausted, ctx } = this.search;
    const open = SCRIPT_KNOBS.map((knob) => knob(best, ctx)).filter((p) => p && 'change' in p && !exhausted.has(p.change.knob) && !this.refusal(p.change)).length;
    return Math.min(open, budget);
  }

  private next(best: ScriptOverrides, ctx: ScriptKnobContext, exhausted: Set<string>): OptimiseChange | null {
    for (const knob of SCRIPT_KNOBS) {
      const p = knob(best, ctx);
      if (!p || !('change' in p) || exhausted.has(p.change.knob) || this.refusal(p.change)) continue;
      return p.change;
    }
    return null;
  }

  /** One launch with these overrides, stopped after the measured steps; its kill is the job's cancel while it runs. */
  private async measure(overrides: ScriptOverrides): Promise<Measured> {
    const r = this.request;
    const n = ++this.launches;
    if (this.job.cancelled) throw new ApiError('E_CANCELLED', `cancelled before launch ${n}`);
    const t0 = Date.now();
    const trialOptions = { target: r.target, overrides, warmupSteps: r.warmupSteps, steps: r.steps, timeoutMs: r.timeoutSeconds * 1000, probeDir: this.dir };
    const record = await runTrial({
      ...trialOptions,
      onStarted: (cancel) => this.jobs.started(this.job, cancel),
      onLine: (stream, line) => {
        this.events.emit('script.output', { jobId: this.job.id, runId: this.run.id, repetition: n, stream, line });
        this.options.onOutput?.(stream, line, n);
      },
    });
    this.job.cancel = null;
    this.launchSeconds.push((Date.now() - t0) / 1000);
    const error = trialError(record, trialOptions);
    if (error) throw error;
    const ranks = record.connections.map((c) => summarizeRank(c, r.warmupSteps, r.steps)).filter((x): x is RankSummary => x !== null);
    if (ranks.length === 0) throw new ApiError('E_SCRIPT', `launch ${n} measured no step after the ${r.warmupSteps} warm-up step(s): the script ended too early`);
    const combined = combineRanks(ranks);
    const loaderMessage = record.connections.flatMap((c) => c.messages).find((m) => m.type === 'loader');
    this.run.appendEvent({ type: 'optimise.launch', launch: n, overrides, samplesPerSec: combined.samplesPerSec, stepMs: combined.steadyStateMeanMs });
    // The script's own settings: from a launch that did not override them.
    const loader = loaderMessage?.type === 'loader' ? { ...loaderMessage.settings } : null;
    if (loader) {
      for (const key of ['num_workers', 'prefetch_factor', 'pin_memory', 'persistent_workers', 'batch_size'] as const) {
        if (overrides[`dataloader.${key}`] !== undefined) loader[key] = null;
      }
    }
    return { samplesPerSec: combined.samplesPerSec, stepMs: combined.steadyStateMeanMs, phasesMs: combined.phasesMs, device: ranks[0].rank.device, loader };
  }

  private async interleaved(a: ScriptOverrides, b: ScriptOverrides, phase: 'trial' | 'final', index: number | null, label: string) {
    const out = { a: [] as number[], b: [] as number[] };
    for (let i = 0; i < this.request.repeat; i++) {
      out.a.push((await this.measure(a)).samplesPerSec);
      out.b.push((await this.measure(b)).samplesPerSec);
      this.progress(phase, index, i + 1, this.request.repeat, label, null);
    }
    return out;
  }

  private async trial(index: number, best: ScriptOverrides, change: OptimiseChange, floor: number): Promise<OptimiseTrial> {
    const t0 = Date.now();
    try {
      const m = await this.interleaved(best, apply(best, change), 'trial', index, change.label);
      const verdict = decideTrial({
        best: m.a,
        candidate: m.b,
        noiseFloor: floor,
        // No loss from a script: the guard has nothing to compare (numerics changes are limited to max-speed instead).
        lossDelta: null,
        lossTolerance: 1,
        recipeChange: change.kind === 'recipe',
        allowRecipeChanges: this.request.allowRecipeChanges,
      });
      return { index, change, decision: verdict.decision, why: verdict.why, speedup: verdict.speedup, bestSamplesPerSec: m.a, candidateSamplesPerSec: m.b, lossDelta: null, kept: verdict.kept, seconds: (Date.now() - t0) / 1000, error: null };
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      // A cancel ends the wizard: the trial in flight is dropped, never recorded as crashed.
      if (e.code === 'E_CANCELLED' || this.job.cancelled) throw e.code === 'E_CANCELLED' ? e : new ApiError('E_CANCELLED', e.message);
      // What this change did (an OOM at a larger batch, torch refusing a setting): the trial's outcome; the wizard goes on.
      return {
        index,
        change,
        decision: 'crashed',
        why: `the trial ${e.code === 'E_OOM' ? 'ran out of memory' : `failed (${e.code})`}; the wizard continues from the current best`,
        speedup: null,
        bestSamplesPerSec: [],
        candidateSamplesPerSec: [],
        lossDelta: null,
        kept: false,
        seconds: (Date.now() - t0) / 1000,
        error: e.message,
      };
    }
  }

  private async final(baseline: ScriptOverrides, best: ScriptOverrides, baseSamples: number[], floor: number): Promise<ScriptOptimiseResult['final']> {
    const kept = this.trials.filter((t) => t.kept).map((t) => t.change.label);
    const proposals = this.trials.filter((t) => t.decision === 'proposed').map((t) => `${t.change.label}: ${t.change.note ?? ''}`.trim());
    const words: FinalWords = {
      subject: `The script with ${kept.join(', ')}`,
      unchanged: 'keep the script as it runs',
      allowRecipe: 'allow recipe changes (--allow-recipe-changes, or the box in the Optimise area)',
    };
    if (kept.length === 0) {
      const s = medianInterval(baseSamples);
      return { overrides: best, changes: [], speedup: { low: 1, median: 1, high: 1 }, samplesPerSec: s, verdict: unchangedVerdict(this.trials, floor, s.median, words), proposals };
    }
    const m = await this.interleaved(baseline, best, 'final', null, 'final overrides vs baseline');
    const { coverage, ...speedup } = pairedSpeedup(m.a, m.b);
    const verdict = measuredVerdict(this.trials, speedup, coverage, m.a.length, words);
    return { overrides: best, changes: kept, speedup, samplesPerSec: medianInterval(m.b), verdict, proposals };
  }

  private progress(phase: OptimiseProgress['phase'], trial: number | null, repetition: number, repetitions: number, label: string | null, finishedTrial: OptimiseTrial | null) {
    const p: OptimiseProgress = {
      optimiseId: this.job.id,
      runId: this.run.id,
      phase,
      trial,
      maxTrials: this.request.maxTrials,
      repetition,
      repetitions,
      label,
      elapsedSeconds: (Date.now() - this.started) / 1000,
      etaSeconds: wizardEta({
        launchSeconds: this.launchSeconds,
        phase,
        repetition,
        repeat: this.request.repeat,
        trialsLeft: this.trialsLeft() - (phase === 'trial' && !finishedTrial ? 1 : 0),
        finalDone: phase === 'done',
      }),
      finishedTrial,
    };
    this.events.emit('optimise.progress', p);
    this.options.onProgress?.(p);
  }
}
