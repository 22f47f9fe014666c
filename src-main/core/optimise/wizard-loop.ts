import { ApiError } from '../../api/errors';
import type { ConditionsRow, OptimiseChange, OptimiseProgress, OptimiseTrial, SkippedChange } from '../../api/optimise';
import type { Interval } from '../stats/medians';
import { median, medianInterval } from '../stats/medians';
import type { FinalComparison, LoopProgress, Repetition, SearchState, WizardRules, WizardTarget } from '../targets/target-runner';
import { WizardCancelled } from '../targets/wizard-cancelled';
import { conditionsDiffer } from '../../api/confounders';
import { wizardEta } from './eta';
import { measuredVerdict, unchangedVerdict } from './final-verdict';
import { PRESETS } from '../knobs/presets';
import { decideTrial, noiseFloor, pairedSpeedup, relativeLossDelta } from './trial-decision';
import type { TrialEvidence } from './trial-decision';
import { acrossStreams } from './loss-streams';

/** Pairs measured again per comparison, at most, when their two sides saw different conditions. */
export const CONFOUNDER_RETRIES = 2;

export interface LoopHooks {
  /** Whether the user cancelled: checked before and after every repetition. */
  cancelled(): boolean;
  progress(p: LoopProgress): void;
  /** After each trial is added to the state (and the best moved): save it, record it. */
  afterTrial(trial: OptimiseTrial): Promise<void>;
}

/** A trial's samples/J on both sides, where every repetition had them. */
function perJouleArrays(best: readonly Repetition[], candidate: readonly Repetition[]): Pick<OptimiseTrial, 'bestSamplesPerJoule' | 'candidateSamplesPerJoule'> {
  const a = WizardLoop.perJoule(best);
  const b = WizardLoop.perJoule(candidate);
  return a && b ? { bestSamplesPerJoule: a, candidateSamplesPerJoule: b } : {};
}

function remember(skipped: SkippedChange[], entry: SkippedChange): void {
  if (!skipped.some((s) => s.change.knob === entry.change.knob && s.why === entry.why)) skipped.push(entry);
}

/**
 * The optimisation wizard's rules (ADR 0012), once for every target: coordinate ascent over the
 * runner's knobs, one change at a time on top of the current best, each measured A/B/A/B against it
 * and kept only when its paired speedup beats the noise (and, where the runner measures loss, the loss
 * stays within the preset's tolerance, or for a change of the random streams within their spread, ADR 0042);
 * a crash or an OOM is the trial's outcome; then the best against
 * the baseline once more, whose speedup is the one reported. The owner (OptimiseService for the
 * engine, optimiseScript for a script) does the baseline's bookkeeping, saves, and reports.
 */
export class WizardLoop<C, R extends Repetition> {
  /** Seconds each finished repetition took, for the ETA. */
  readonly repetitionSeconds: number[] = [];
  /** The search state the ETA counts from: set by search(), or by the owner once its baseline is known. */
  current: SearchState<C> | null = null;
  private count = 0;
  private finalDone = false;

  constructor(
    private readonly runner: WizardTarget<C, R>,
    private readonly rules: WizardRules,
    private readonly hooks: LoopHooks,
  ) {}

  /** Repetitions run so far by this process (numbers its launches or trainers). */
  get repetitions(): number {
    return this.count;
  }

  /** One repetition, with the cancel checked on both sides of it; on random stream `stream` where it is not 0 (loss-streams.ts). */
  async measure(config: C, stream = 0): Promise<R> {
    if (this.hooks.cancelled()) throw new WizardCancelled(`cancelled before ${this.runner.unit} ${this.count + 1}`);
    this.count++;
    const t0 = Date.now();
    const r = stream !== 0 ? await this.runner.measure(config, stream) : await this.runner.measure(config);
    this.repetitionSeconds.push((Date.now() - t0) / 1000);
    if (this.hooks.cancelled()) throw new WizardCancelled(`cancelled after ${this.runner.unit} ${this.count}`);
    return r;
  }

  /**
   * The number the objective compares for one repetition: its samples/s, or its samples per joule of GPU energy
   * (refused, naming why, where the repetition read no GPU power: a CPU target, a GPU without power readings).
   */
  value(r: R): number {
    if (this.rules.objective === 'throughput') return r.samplesPerSec;
    if (r.samplesPerJoule == null || !(r.samplesPerJoule > 0)) {
      throw new ApiError(
        'E_BAD_INPUT',
        `the energy objective compares samples per joule of GPU energy, and this ${this.runner.unit} measured none: ${r.energyMissing ?? 'no GPU power was read over it'}; optimise samples/s instead (the throughput objective)`,
      );
    }
    return r.samplesPerJoule;
  }

  /** The baseline's noise in the objective's own number (samples/s or samples/J). */
  baselineNoise(reps: readonly R[]): number {
    return noiseFloor(reps.map((r) => this.value(r)));
  }

  /** Samples/J of every repetition, where every one had them (both objectives record them, for the report). */
  static perJoule(reps: readonly Repetition[]): number[] | null {
    const xs = reps.map((r) => r.samplesPerJoule);
    return xs.length && xs.every((x): x is number => typeof x === 'number' && x > 0) ? xs : null;
  }

  /** The baseline: `repeat` repetitions of the starting configuration. */
  async baseline(config: C): Promise<R[]> {
    const k = this.rules.repeat;
    const reps: R[] = [];
    // Said before the first repetition, which may take long (the engine starting, its warm-up steps): what runs is known at once.
    this.progress('baseline', null, 0, k, null, null);
    for (let i = 0; i < k; i++) {
      const r = await this.measure(config);
      this.value(r); // the energy objective is refused after the first repetition that cannot give it, not after the baseline
      reps.push(r);
      this.progress('baseline', null, i + 1, k, null, null);
    }
    return reps;
  }

  /** Why the change is not tried: the preset's rule, then the target's own; null when it may be. */
  private refusal(change: OptimiseChange): string | null {
    return PRESETS[this.rules.preset].refuses(change) ?? this.runner.refuses(change, this.rules.preset);
  }

  /**
   * The next change from a state: the first candidate neither refused nor tried since the last kept
   * change; null when none is left or the trial budget is spent. Refused and inapplicable changes are
   * added to `state.skipped` with the reason.
   */
  next(state: SearchState<C>): OptimiseChange | null {
    const found = this.runner.candidates(state.best, state.exhausted);
    if (!found) throw new RangeError('WizardLoop.next: the target has no candidates before its baseline');
    for (const s of found.skipped) remember(state.skipped, { change: s.change, why: PRESETS[this.rules.preset].refuses(s.change) ?? s.why });
    let next: OptimiseChange | null = null;
    for (const c of found.changes) {
      const refused = this.refusal(c);
      if (refused) remember(state.skipped, { change: c, why: refused });
      else next ??= c;
    }
    return state.trials.length >= this.rules.maxTrials ? null : next;
  }

  /** Trials likely left: the open changes within the budget; the budget itself before the target knows its knobs. */
  trialsLeft(state: SearchState<C> | null): number {
    const budget = state ? Math.max(0, this.rules.maxTrials - state.trials.length) : this.rules.maxTrials;
    const found = state ? this.runner.candidates(state.best, state.exhausted) : null;
    if (!state || !found) return budget;
    return Math.min(budget, found.changes.filter((c) => this.refusal(c) === null).length);
  }

  /** The coordinate ascent from wherever `state` stands until no change is left; the state moves as it goes. */
  async search(state: SearchState<C>, noiseFloor: number): Promise<void> {
    this.current = state;
    for (let change = this.next(state); change; change = this.next(state)) {
      const trial = await this.trial(state.trials.length + 1, state.best, change, noiseFloor);
      state.trials.push(trial);
      if (trial.kept) {
        state.best = this.runner.apply(state.best, change);
        state.exhausted = [];
      } else {
        state.exhausted.push(change.knob);
      }
      await this.hooks.afterTrial(trial);
      this.progress('trial', trial.index, this.rules.repeat, this.rules.repeat, change.label, trial);
    }
    // A change the budget left untried is reported, so "nothing beat the noise" never hides one.
    if (state.trials.length >= this.rules.maxTrials) {
      for (const c of this.runner.candidates(state.best, state.exhausted)?.changes ?? []) {
        if (!this.refusal(c) && !state.trials.some((t) => t.change.knob === c.knob && t.change.to === c.to)) {
          remember(state.skipped, { change: c, why: `not tried: the wizard stopped at its most trials (${this.rules.maxTrials})` });
        }
      }
    }
  }

  /**
   * `a` and `b`, `repeat` repetitions each, interleaved A/B/A/B so a drift hits both. A pair whose two
   * sides saw different conditions (another process's load, a GPU slowing down) is measured again, at
   * most CONFOUNDER_RETRIES times; one that still differs is kept and named in `confounded`. With `streams`,
   * pair i runs both sides on random stream i (the first on the wizard's seed): a change of the random streams
   * is judged against the loss's spread across them (loss-streams.ts), at no launch more.
   */
  async interleaved(a: C, b: C, phase: 'trial' | 'final', index: number | null, label: string, streams = false) {
    const k = this.rules.repeat;
    const out = {
      /** The objective's numbers (samples/s or samples/J): what the decision compares. */
      a: [] as number[],
      b: [] as number[],
      aSps: [] as number[],
      bSps: [] as number[],
      aLoss: [] as number[],
      bLoss: [] as number[],
      aReps: [] as R[],
      bReps: [] as R[],
      rows: [] as ConditionsRow[],
      remeasured: 0,
      confounded: null as string | null,
    };
    // A trial's or the final comparison's start is said before its first pair, not only after it.
    this.progress(phase, index, 0, k, label, null);
    for (let i = 0; i < k; i++) {
      const ma = await this.measure(a, streams ? i : 0);
      const mb = await this.measure(b, streams ? i : 0);
      const differ = conditionsDiffer(ma.conditions, mb.conditions, ['the best', 'the candidate']);
      const again = differ !== null && this.rules.confounders === 'remeasure' && out.remeasured < CONFOUNDER_RETRIES;
      const row = (side: ConditionsRow['side'], m: R): ConditionsRow => ({ pair: i + 1, side, samplesPerSec: m.samplesPerSec, conditions: m.conditions ?? null, remeasured: again ? differ : null });
      out.rows.push(row('best', ma), row('candidate', mb));
      if (again) {
        out.remeasured++;
        // Said at once: the pair count stands still meanwhile, and a person would otherwise see a stalled wizard.
        this.progress(phase, index, i, k, `${label}; measuring pair ${i + 1} again (${differ})`, null);
        i--; // the same pair once more
        continue;
      }
      if (differ !== null && this.rules.confounders === 'remeasure') out.confounded ??= `pair ${i + 1}: ${differ}`;
      out.aReps.push(ma);
      out.a.push(this.value(ma));
      out.aSps.push(ma.samplesPerSec);
      if (ma.loss !== null) out.aLoss.push(ma.loss);
      out.bReps.push(mb);
      out.b.push(this.value(mb));
      out.bSps.push(mb.samplesPerSec);
      if (mb.loss !== null) out.bLoss.push(mb.loss);
      this.progress(phase, index, i + 1, k, label, null);
    }
    return out;
  }

  private async trial(index: number, best: C, change: OptimiseChange, noiseFloor: number): Promise<OptimiseTrial> {
    const t0 = Date.now();
    const partial = { best: [] as number[], cand: [] as number[] };
    try {
      const candidate = this.runner.apply(best, change);
      // A first launch unlike the rest (a cold compile cache) is run before the pairs and reported apart, never paired.
      const warming = this.runner.warmUp?.(candidate, change) ?? null;
      if (warming) this.progress('trial', index, 0, this.rules.repeat, `${change.label}: a first launch to fill its caches, not measured`, null);
      const warm = warming ? await warming : null;
      const streams = this.randomStreams(change);
      const m = await this.interleaved(best, candidate, 'trial', index, change.label, streams?.measured === 'across-streams');
      partial.best = m.aSps;
      partial.cand = m.bSps;
      // A launch whose loss diverged (Infinity) makes its side's loss diverged; the point median needs no bootstrap.
      const sideLoss = (xs: number[]) => (xs.length === 0 ? null : xs.some((x) => !Number.isFinite(x)) ? Infinity : median(xs));
      // A loss that two launches of the same settings do not reproduce guards nothing: the change is judged on speed, and says so.
      const unchecked = this.runner.lossUnchecked?.() ?? null;
      const across = unchecked === null && streams?.measured === 'across-streams' ? acrossStreams(m.aLoss, m.bLoss) : null;
      const lossDelta = unchecked === null ? (across?.delta ?? relativeLossDelta(sideLoss(m.bLoss), sideLoss(m.aLoss))) : null;
      const verdict = decideTrial({
        best: m.a,
        candidate: m.b,
        noiseFloor,
        lossDelta,
        lossTolerance: PRESETS[this.rules.preset].lossTolerance(change, this.rules.lossTolerance),
        recipeChange: change.kind === 'recipe',
        allowRecipeChanges: this.rules.allowRecipeChanges,
        randomStreams: streams && { ...streams, across },
      });
      const { speedup } = verdict;
      // A pair the machine still treated unequally after its re-measures leaves the trial undecided: what was measured is shown, not judged.
      const confounded = m.confounded !== null && verdict.decision !== 'changes-results';
      const decision = confounded ? 'confounded' : verdict.decision;
      const kept = confounded ? false : verdict.kept;
      const extras = this.runner.trialExtras?.(change, m.aReps, m.bReps, warm) ?? null;
      let why = confounded
        ? `confounded: ${m.confounded} (measured again ${m.remeasured} time${m.remeasured === 1 ? '' : 's'}); not decided, what it would have said: ${verdict.why}`
        : unchecked !== null && decision === 'accept' && change.kind !== 'recipe'
          ? `${verdict.why}; kept without a loss check: ${unchecked}`
          : verdict.why;
      if (!confounded && m.remeasured > 0) why = `${why}; ${m.remeasured} pair${m.remeasured === 1 ? ' was' : 's were'} measured again because the machine's conditions differed between its sides`;
      if (extras) why = `${why}; ${extras.why}`;
      // JSON has no Infinity: a diverged loss is told by the decision's why, its delta left unmeasured.
      const delta = lossDelta !== null && Number.isFinite(lossDelta) ? lossDelta : null;
      const trial: OptimiseTrial = {
        index,
        change,
        decision,
        why,
        speedup,
        bestSamplesPerSec: m.aSps,
        candidateSamplesPerSec: m.bSps,
        ...perJouleArrays(m.aReps, m.bReps),
        lossDelta: delta,
        kept,
        ...(verdict.lean && !confounded ? { lean: verdict.lean } : {}),
        seconds: (Date.now() - t0) / 1000,
        error: null,
        ...(m.rows.some((r) => r.conditions !== null) ? { conditions: m.rows } : {}),
      };
      return extras?.compile ? { ...trial, compile: extras.compile } : trial;
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      // A cancel ends the wizard: the trial in flight is dropped (a resume runs it again), never recorded as crashed.
      if (e.code === 'E_CANCELLED' || this.hooks.cancelled()) throw e.code === 'E_CANCELLED' ? e : new WizardCancelled(e.message);
      // A crash or an OOM is what this change did: the trial's outcome; the wizard goes on from the current best.
      const what = e.code === 'E_OOM' ? 'ran out of memory' : e.code === 'E_ENGINE_CRASHED' ? 'crashed the engine host' : `failed (${e.code})`;
      return {
        index,
        change,
        decision: 'crashed',
        why: `the trial ${what}; the wizard continues from the current best`,
        speedup: null,
        bestSamplesPerSec: partial.best,
        candidateSamplesPerSec: partial.cand,
        lossDelta: null,
        kept: false,
        seconds: (Date.now() - t0) / 1000,
        error: e.message,
      };
    }
  }

  /**
   * Whether a change alters which random streams the training draws from (the target says, from its knob table) and
   * how its loss is then measured: across streams, or with the same seed under the reproducible preset, which asks
   * for the same loss from the same seed. Null: a deterministic change, or a target without streams.
   */
  private randomStreams(change: OptimiseChange): Pick<NonNullable<TrialEvidence['randomStreams']>, 'why' | 'measured'> | null {
    const why = this.runner.randomStreams?.(change) ?? null;
    if (why === null || change.kind === 'recipe') return null;
    return { why, measured: this.rules.preset === 'reproducible' || this.rules.repeat < 2 ? 'same-seed' : 'across-streams' };
  }

  /**
   * The best against the baseline, A/B/A/B once more: the speedup reported is this measurement. With
   * nothing kept there is nothing to measure, and the verdict says why (noise, slower, proposals).
   */
  async final(baselineConfig: C, state: SearchState<C>, baseline: { samplesPerSec: Interval; noiseFloor: number }): Promise<FinalComparison<C>> {
    const kept = state.trials.filter((t) => t.kept).map((t) => t.change.label);
    const proposals = state.trials.filter((t) => t.decision === 'proposed').map((t) => `${t.change.label}: ${t.change.note ?? ''}`.trim());
    const words = this.runner.words(kept);
    if (kept.length === 0) {
      this.finalDone = true;
      const verdict = unchangedVerdict(state.trials, baseline.noiseFloor, baseline.samplesPerSec.median, words);
      return { config: state.best, changes: [], speedup: { low: 1, median: 1, high: 1 }, samplesPerSec: baseline.samplesPerSec, verdict, proposals };
    }
    const m = await this.interleaved(baselineConfig, state.best, 'final', null, 'final configuration vs baseline');
    this.finalDone = true;
    const { coverage, ...speedup } = pairedSpeedup(m.a, m.b);
    const measured = measuredVerdict(state.trials, speedup, coverage, m.a.length, words, this.rules.objective === 'energy');
    const verdict = m.confounded ? `${measured} Take it with care: the final comparison was confounded (${m.confounded}), even after ${m.remeasured} re-measured pairs.` : measured;
    const conditions = m.rows.some((r) => r.conditions !== null) ? { conditions: m.rows } : {};
    return { config: state.best, changes: kept, speedup, samplesPerSec: medianInterval(m.bSps), baselineSamplesPerSec: medianInterval(m.aSps), verdict, proposals, ...conditions };
  }

  /** Reports progress with the ETA; `finalDone` marks a final measured in an earlier process (a resumed wizard). */
  progress(phase: OptimiseProgress['phase'], trial: number | null, repetition: number, repetitions: number, label: string | null, finishedTrial: OptimiseTrial | null, finalDone = false): void {
    // Before the target knows its knobs the trials left are the budget: an upper bound that tightens once they are known.
    const etaSeconds = wizardEta({
      launchSeconds: this.repetitionSeconds,
      phase,
      repetition,
      repeat: this.rules.repeat,
      trialsLeft: this.trialsLeft(this.current) - (phase === 'trial' && !finishedTrial ? 1 : 0),
      finalDone: finalDone || this.finalDone,
    });
    this.hooks.progress({ phase, trial, repetition, repetitions, label, finishedTrial, etaSeconds });
  }
}
