import type { BuildProgress } from '@api/datasets';
import type { Devices } from '@api/devices';
import { ApiError } from '@api/errors';
import type { JobInfo, TargetKind } from '@api/jobs';
import type { ModelSpec } from '@api/model-spec';
import type { OptimiseProgress, OptimiseRequest, OptimiseTrial, WizardState } from '@api/optimise';
import { OptimiseRequestSchema, optimiseTargetTitle } from '@api/optimise';
import type { OptimiseResult, ScriptOptimiseRecord } from '@api/optimise-result';
import { OptimiseRecordSchema } from '@api/optimise-result';
import type { ScriptJoinEvent, ScriptOptimiseBaselineEvent, ScriptOptimiseRequestInput, ScriptOutputEvent, ScriptTarget } from '@api/script-target';
import { ScriptOptimiseRequestSchema } from '@api/script-target';
import type { RunDetail, RunSummary } from '@api/training';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import type { OptimiseFormErrors, OptimiseFormValues, ScriptWizardValues } from '../view-models/optimise-form';
import { formFromRequest, optimiseFormValues, optimiseRequest, scriptOptimiseForm, scriptOptimiseRequest, scriptWizardValues, wizardFromRequest } from '../view-models/optimise-form';
import type { BatchApplyValues, ScriptBatchApplyValues } from '../view-models/batch-size-apply';
import { withScriptBatch } from '../view-models/batch-size-apply';
import { exampleOptimiseForm } from '../view-models/first-run';
import { useJob } from '../composables/useJob';
import { followRunningTarget } from '../composables/useTargetSwitch';
import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { useLoader } from './load-state';
import { scriptOutputBuffer } from '../composables/useScriptJob';
import type { ScriptForm } from '../view-models/script-target-form';
import { quoteArgv } from '../view-models/script-target-form';

/** How a saved optimisation stands, as the list shows it ('interrupted': its process is gone mid-run). */
export type PastStatus = WizardState['status'] | 'interrupted';

/** One optimisation of the workspace, from its saved state and the runs that recorded it. */
export interface PastOptimisation {
  /** The wizard's id (engine), or its run's id (script: one run holds the whole wizard). */
  jobId: string;
  /** Which wizard: the engine's (a saved state, resumable; the default) or a script target's (one run). */
  kind?: 'engine' | 'script';
  title: string;
  status: PastStatus;
  updatedAt: string;
  preset: WizardState['request']['preset'];
  trials: number;
  kept: string[];
  final: { speedup: { low: number; median: number; high: number } } | null;
  message: string | null;
  /** Cancelled, interrupted and failed optimisations continue from their saved state. */
  resumable: boolean;
}

/** How many of the newest optimise runs the list reads (each costs a runs.get and an optimise.state). */
export const LISTED_OPTIMISE_RUNS = 30;

/** How often the saved state of a wizard running elsewhere is re-read (another window's, or the CLI's, which sends no events here). */
export const WATCH_INTERVAL_MS = 1000;

/** "mlp on fashion-mnist": what was optimised, in a few words. */
export function targetTitle(target: WizardState['request']['target']): string {
  return optimiseTargetTitle(target);
}

/** A saved state's status, with 'running' told apart from 'interrupted' by the run that holds it. */
export function pastStatus(state: WizardState, lastRun: RunSummary | undefined): PastStatus {
  if (state.status !== 'running') return state.status;
  return lastRun?.status === 'running' ? 'running' : 'interrupted';
}

/** What run.json of a script optimisation holds (the wizard writes it; see optimiseScript). */
export interface ScriptOptimiseRun {
  runId: string;
  status: 'running' | 'completed' | 'cancelled' | 'failed' | 'interrupted';
  title: string;
  target: ScriptTarget;
  preset: ScriptOptimiseRecord['preset'];
  maxTrials: number;
  /** The job that runs it, so a window that did not start it can still follow and cancel it. */
  jobId: string | null;
  /** Completed: the result; cancelled or failed: what it had measured; running: null. */
  record: ScriptOptimiseRecord | null;
  /** Why it stopped early, as the run recorded it. */
  message: string | null;
  updatedAt: string;
}

/**
 * A run of kind optimise read as a script optimisation, or null when its target is not a script
 * (an engine wizard, listed from its saved state instead) or its config is not one this window reads.
 */
export function scriptOptimiseRun(detail: RunDetail): ScriptOptimiseRun | null {
  const config = (detail.record as { config?: { target?: { kind?: unknown }; request?: unknown; jobId?: unknown } } | null)?.config;
  if (detail.summary.kind !== 'optimise' || config?.target?.kind !== 'script') return null;
  const request = ScriptOptimiseRequestSchema.safeParse(config.request);
  if (!request.success) return null;
  const parsed = OptimiseRecordSchema.safeParse((detail.record as { result?: unknown }).result);
  const record = parsed.success && parsed.data.target.kind === 'script' ? { ...parsed.data, target: parsed.data.target } : null;
  const s = detail.summary;
  return {
    runId: s.id,
    status: s.status === 'unreadable' ? 'failed' : s.status,
    title: quoteArgv(request.data.target.command),
    target: request.data.target,
    preset: request.data.preset,
    maxTrials: request.data.maxTrials,
    jobId: typeof config.jobId === 'string' ? config.jobId : null,
    record,
    message: s.error,
    updatedAt: s.finishedAt ?? s.createdAt,
  };
}

/** A script optimisation's run as the list shows it: titled by its command. */
export function scriptPastEntry(run: ScriptOptimiseRun): PastOptimisation {
  const trials = run.record?.trials ?? [];
  return {
    jobId: run.runId,
    kind: 'script',
    title: run.title,
    status: run.status,
    updatedAt: run.updatedAt,
    preset: run.preset,
    trials: trials.length,
    kept: trials.filter((t) => t.kept).map((t) => t.change.label),
    final: run.record?.final ?? null,
    message: run.message,
    // Its state goes on from the baseline and the trials it finished (a killed one's too: saved after each trial).
    resumable: run.status === 'cancelled' || run.status === 'failed' || run.status === 'interrupted',
  };
}

/** An engine wizard's saved state (optimise.state answers a script wizard's record for a script's job id). */
export async function engineState(jobId: string): Promise<WizardState> {
  const s = await useApiClient().call('optimise.state', { jobId });
  if (s === null || !('schemaVersion' in s)) throw new Error(`optimisation ${jobId} is not an engine wizard`);
  return s;
}

/** What a script wizard has measured so far, by its job id (which names its run); null before its baseline. */
export async function scriptState(jobId: string): Promise<ScriptOptimiseRecord | null> {
  const s = await useApiClient().call('optimise.state', { jobId });
  if (s === null) return null;
  if ('schemaVersion' in s || s.target.kind !== 'script') throw new Error(`optimisation ${jobId} is not a script wizard`);
  return { ...s, target: s.target };
}

/** The trials of both lists, one per index (a live event and a state read may carry the same trial). */
function mergeTrials(a: readonly OptimiseTrial[], b: readonly OptimiseTrial[]): OptimiseTrial[] {
  const byIndex = new Map<number, OptimiseTrial>();
  for (const t of [...a, ...b]) byIndex.set(t.index, t);
  return [...byIndex.values()].sort((x, y) => x.index - y.index);
}

/** How often the run of a script wizard that runs elsewhere (another window, the CLI) is re-read. */
export const SCRIPT_WATCH_INTERVAL_MS = 2000;

/**
 * What only a script's wizard has (the area's one store below holds it as `script`): the script target's form,
 * "Run this command?", the wizard running from this window or re-attached after a reload or from another window
 * through the jobs store (its progress, baseline, trials and the script's output as they arrive), Cancel, the
 * refusal of a shell that does not run scripts, and a past script optimisation opened from the list (its run).
 */
function scriptOptimise() {
  const form = ref<ScriptForm>(scriptOptimiseForm());
  const wizard = ref<ScriptWizardValues>(scriptWizardValues());
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptOptimiseRequestInput | null>(null);
  /** The request of the wizard followed as a job (it has no run to show until it ends). */
  const started = shallowRef<ScriptOptimiseRequestInput | null>(null);
  /** The job of the wizard shown while it runs (from here or elsewhere): what Cancel stops. */
  const jobId = ref<string | null>(null);
  /** The wizard shown: its run as saved (null while one starts from this window and has no run yet). */
  const shown = shallowRef<ScriptOptimiseRun | null>(null);
  const progress = shallowRef<OptimiseProgress | null>(null);
  /** The baseline as soon as it is measured (the run holds it only once the wizard ends). */
  const liveBaseline = shallowRef<Pick<ScriptOptimiseBaselineEvent, 'baseline' | 'loader'> | null>(null);
  /** Its trials, each as soon as it finishes. */
  const trials = shallowRef<OptimiseTrial[]>([]);
  const buffer = scriptOutputBuffer();
  const output = buffer.lines;
  /** A job across machines: the code its other nodes join with, from its first launch on. */
  const join = ref<string | null>(null);
  /** A wizard is followed to its end as a job: started here, or re-attached (a reload, another window). */
  const running = ref(false);
  /** The wizard shown runs elsewhere and is followed: its events, and its run re-read until it ends. */
  const watching = ref(false);
  const error = ref<string | null>(null);
  const cancelled = ref(false);
  /** The shell's refusal (serve mode without --allow-scripts), word for word. */
  const forbidden = ref<string | null>(null);
  /** The run of the job followed, from its first event (the wizard's call returns it only at the end). */
  let followedRun: string | null = null;

  /** Only the events of the run followed: the one its first event names, or the one watched. */
  const ofFollowedRun = (runId: string | null) => followedRun === null || runId === followedRun;

  function takeProgress(p: OptimiseProgress): void {
    if (!ofFollowedRun(p.runId)) return;
    followedRun ??= p.runId;
    progress.value = p;
    if (p.finishedTrial) trials.value = mergeTrials(trials.value, [p.finishedTrial]);
  }
  function takeBaseline(e: ScriptOptimiseBaselineEvent): void {
    if (!ofFollowedRun(e.runId)) return;
    liveBaseline.value = { baseline: e.baseline, loader: e.loader };
    // A resumed wizard's kept trials come with its starting point.
    if (e.trials.length) trials.value = mergeTrials(e.trials, trials.value);
  }
  function takeOutput(e: ScriptOutputEvent): void {
    if (!ofFollowedRun(e.runId)) return;
    followedRun ??= e.runId;
    buffer.push(e);
  }

  function takeJoin(e: ScriptJoinEvent): void {
    join.value = e.code;
  }

  /** The wizard run as a job (started here, or re-attached): its events, replayed ones first, come through it. */
  const job = useJob({ 'optimise.progress': takeProgress, 'script.optimiseBaseline': takeBaseline, 'script.output': takeOutput, 'script.join': takeJoin });

  /** Takes the events of a job this window does not follow as one (a wizard watched from the list); returns the unsubscribe. */
  function listen(id: string, runId: string | null): () => void {
    const client = useApiClient();
    followedRun = runId;
    const offs = [
      client.on('optimise.progress', (p) => p.jobId === id && takeProgress(p)),
      client.on('script.optimiseBaseline', (e) => e.jobId === id && takeBaseline(e)),
      client.on('script.output', (e) => e.jobId === id && takeOutput(e)),
      client.on('script.join', (e) => e.jobId === id && takeJoin(e)),
    ];
    return () => offs.forEach((off) => off());
  }

  /** Re-reads a run; a read for a wizard no longer shown is dropped. */
  async function loadRun(runId: string): Promise<ScriptOptimiseRun | null> {
    const client = useApiClient();
    let run = scriptOptimiseRun(await client.call('runs.get', { id: runId }));
    if (run === null) throw new Error(`run ${runId} is not a script optimisation`);
    // Running, or killed: run.json has no result; the state saved after the baseline and each trial has what it measured.
    if (run.record === null) run = { ...run, record: await scriptState(runId) };
    if (shown.value !== null && shown.value.runId !== runId) return null;
    shown.value = run;
    if (run.record) trials.value = mergeTrials(run.record.trials, trials.value);
    return run;
  }

  function reset(): void {
    unwatch();
    shown.value = null;
    trials.value = [];
    buffer.clear();
    progress.value = null;
    join.value = null;
    liveBaseline.value = null;
    error.value = null;
    cancelled.value = false;
    forbidden.value = null;
  }

  /** Checks the form with the contract's schema and asks "Run this command?"; nothing runs yet. */
  function prepare(): void {
    error.value = null;
    try {
      pending.value = scriptOptimiseRequest(form.value, wizard.value);
    } catch (err) {
      pending.value = null;
      error.value = err instanceof Error ? err.message : String(err);
    }
  }

  function dismiss(): void {
    pending.value = null;
  }

  /** Asks "Run this command?" for going on with a stopped script optimisation: its command and settings, as saved. */
  async function resume(runId: string): Promise<void> {
    if (running.value) return;
    error.value = null;
    try {
      const detail = await useApiClient().call('runs.get', { id: runId });
      const run = scriptOptimiseRun(detail);
      if (!run) throw new Error(`run ${runId} is not a script optimisation: nothing to resume`);
      // The stopped wizard's job id stays with its run: the new job gets its own when it starts.
      const { jobId: _stopped, ...request } = (detail.record as { config: { request: ScriptOptimiseRequestInput } }).config.request;
      pending.value = { ...request, resumeFrom: runId };
      form.value = formFromRequest(request);
      wizard.value = wizardFromRequest({ ...request, preset: run.preset, maxTrials: run.maxTrials });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  /** Follows the wizard's job while `call` runs it; whatever the end, its run is read back. */
  async function follow(call: () => Promise<unknown>): Promise<void> {
    running.value = true;
    followedRun = null;
    const done = call();
    // The job has its id from the call on: Cancel reaches it before its first event.
    jobId.value = job.jobId.value;
    try {
      await done;
      const failure = job.failure.value;
      if (failure?.code === 'E_FORBIDDEN') forbidden.value = failure.message;
      else if (failure) {
        cancelled.value = failure.code === 'E_CANCELLED';
        error.value = job.error.value;
      }
    } finally {
      running.value = false;
      const runId = followedRun;
      progress.value = null;
      // The run holds the result, or what a stopped wizard had measured (its baseline and finished trials).
      if (runId) await loadRun(runId).catch((err: unknown) => (error.value ??= errorText(err)));
      // Refused, or failed before its run existed: nothing to show but the error.
      else started.value = null;
    }
  }

  /** Runs the confirmed wizard to its end (or cancel); whatever the end, its run is read back. */
  async function confirm(): Promise<void> {
    const request = pending.value;
    if (!request || running.value) return;
    pending.value = null;
    reset();
    started.value = request;
    await follow(() => job.start('optimise.start', request));
  }

  /** Follows a wizard started elsewhere (before a reload, in another window): its output, baseline and trials so far, then live ones. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    const request = ScriptOptimiseRequestSchema.safeParse(info.request ?? {});
    pending.value = null;
    reset();
    started.value = request.success ? request.data : null;
    if (request.success) {
      // The fields show what runs, as Resume shows what will.
      form.value = formFromRequest(request.data);
      wizard.value = wizardFromRequest(request.data);
    }
    await follow(() => job.attach({ ...info, method: 'optimise.start', target: 'script' as const }));
  }
  useJobsStore().adopt('optimise', 'script', (info) => void attach(info));

  let stopWatch: (() => void) | null = null;

  function unwatch(): void {
    stopWatch?.();
    stopWatch = null;
    watching.value = false;
  }

  /** Follows a wizard that runs elsewhere: its events (this server's) and its run, until it ends or another is shown. */
  function watchElsewhere(run: ScriptOptimiseRun): void {
    unwatch();
    watching.value = true;
    jobId.value = run.jobId;
    const off = run.jobId ? listen(run.jobId, run.runId) : () => undefined;
    const timer = setInterval(() => {
      void loadRun(run.runId)
        .then((now) => {
          if (now === null || now.status !== 'running') unwatch();
        })
        .catch(() => unwatch());
    }, SCRIPT_WATCH_INTERVAL_MS);
    stopWatch = () => {
      off();
      clearInterval(timer);
    };
  }

  /** Shows a saved script optimisation (not while one runs from this window); one still running is followed. */
  async function open(runId: string): Promise<void> {
    if (running.value) return;
    reset();
    started.value = null;
    jobId.value = null;
    try {
      const run = await loadRun(runId);
      // A job re-attached meanwhile is followed live, not watched.
      if (run?.status === 'running' && !running.value) watchElsewhere(run);
    } catch (err) {
      error.value = errorText(err);
    }
  }

  /** Stops the running (or followed) wizard: the launch in flight is killed; the finished trials stay in its run. */
  async function cancel(): Promise<void> {
    const id = jobId.value;
    if (!id || !(running.value || watching.value)) return;
    if (job.running.value) {
      await job.cancel();
      if (job.error.value) error.value = job.error.value;
      return;
    }
    try {
      const { cancelled: stopped } = await useApiClient().call('jobs.cancel', { jobId: id });
      if (!stopped && watching.value) error.value = `script optimisation ${id} is not running in this server (a trainbench optimise -- … process runs it): press Ctrl-C there`;
    } catch (err) {
      error.value = errorText(err);
    }
  }

  return {
    form, wizard, pending, started, jobId, shown, progress, liveBaseline, trials, output, join, running, watching, error, cancelled, forbidden, attached: job.attached,
    prepare, dismiss, resume, confirm, attach, cancel, open,
  };
}

/**
 * The Optimise area: the form, the wizard shown (running from this window, or opened from the list),
 * its trials as they arrive, Cancel and Resume, and the workspace's past optimisations.
 */
export const useOptimiseStore = defineStore('optimise', () => {
  /** What the form optimises: a built-in model on the engine, or the user's own training command. */
  const target = ref<TargetKind>('engine');
  const form = ref<OptimiseFormValues>(optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' }));
  /** The contract's complaints about the form, by field. */
  const invalid = ref<OptimiseFormErrors>({});
  /** Where the form's values came from when another area applied them ("batch-size search <run id>"); null once typed over or started. */
  const applied = ref<string | null>(null);
  /** The wizard shown: the one running from this window, or the one opened from the list. */
  const jobId = ref<string | null>(null);
  /** The request of a wizard this window re-attached to (a reload, another window): the form shows it while it runs; null otherwise. */
  const attachedRequest = shallowRef<OptimiseRequest | null>(null);
  /** Its saved state, re-read at each phase and after each trial (baseline, diagnosis, limits, best, final). */
  const state = shallowRef<WizardState | null>(null);
  /** Its trials, each as soon as it finishes. */
  const trials = shallowRef<OptimiseTrial[]>([]);
  /** The latest progress while it runs from this window. */
  const progress = shallowRef<OptimiseProgress | null>(null);
  /** While the followed wizard prepares its data: the latest step of that (the example's positions made, the caches built). */
  const preparingData = shallowRef<BuildProgress | null>(null);
  const result = shallowRef<OptimiseResult | null>(null);
  /** A wizard is followed to its end from this window: started or resumed here, or re-attached as a job (a reload, another window). */
  const running = ref(false);
  /** The wizard shown runs elsewhere (another window, or the CLI) and is watched: its events and its saved state. */
  const watching = ref(false);
  /** Why the shown wizard stopped early (cancelled: with how to resume), or what failed. */
  const error = ref<string | null>(null);
  const cancelled = ref(false);
  const past = shallowRef<PastOptimisation[]>([]);

  const { loading: pastLoading, error: pastError, run: refreshPast } = useLoader(async () => {
    const client = useApiClient();
    const runs = (await client.call('runs.list', {})).filter((r) => r.kind === 'optimise').slice(0, LISTED_OPTIMISE_RUNS);
    const details = await Promise.all(runs.map((r) => client.call('runs.get', { id: r.id }).catch(() => null)));
    // Newest run first, so the first run seen of a wizard is its latest.
    const lastRun = new Map<string, RunSummary>();
    details.forEach((d, i) => {
      // An engine wizard's runs name it config.jobId (config.optimiseId before issue 39); a script wizard's run is listed below.
      const config = (d?.record as { config?: { jobId?: unknown; optimiseId?: unknown; target?: { kind?: unknown } } } | undefined)?.config;
      if (config?.target?.kind === 'script') return;
      const id = config?.jobId ?? config?.optimiseId;
      if (typeof id === 'string' && !lastRun.has(id)) lastRun.set(id, runs[i]);
    });
    const states = await Promise.all([...lastRun.keys()].map((id) => engineState(id).catch(() => null)));
    const scriptRuns = details.flatMap((d) => {
      const run = d ? scriptOptimiseRun(d) : null;
      return run ? [run] : [];
    });
    // A running or killed script wizard has no result yet: its saved state counts its trials.
    const scripts = await Promise.all(
      scriptRuns.map(async (run) => scriptPastEntry(run.record ? run : { ...run, record: await scriptState(run.runId).catch(() => null) })),
    );
    const engines = states
      .filter((s): s is WizardState => s !== null)
      .map((s) => {
        const status = pastStatus(s, lastRun.get(s.jobId));
        return {
          jobId: s.jobId,
          kind: 'engine' as const,
          title: targetTitle(s.request.target),
          status,
          updatedAt: s.updatedAt,
          preset: s.request.preset,
          trials: s.trials.length,
          kept: s.trials.filter((t) => t.kept).map((t) => t.change.label),
          final: s.final,
          message: s.message,
          resumable: status === 'cancelled' || status === 'interrupted' || status === 'failed',
        };
      });
    past.value = [...engines, ...scripts].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  });

  /** Re-reads the shown wizard's saved state; a read for a wizard no longer shown is dropped. */
  /** Reads of the saved state, numbered: a progress event and the watch's poll may read at once, and an older read
   * answering last must not put a state back (a wizard seen cancelled shown running again). */
  let stateReads = 0;
  let stateApplied = 0;
  async function loadState(id: string): Promise<void> {
    const read = ++stateReads;
    try {
      const s = await engineState(id);
      if (jobId.value !== id || read < stateApplied) return;
      stateApplied = read;
      state.value = s;
      trials.value = mergeTrials(s.trials, trials.value);
    } catch (err) {
      if (jobId.value === id && !running.value) error.value = errorText(err);
    }
  }

  /** The shown wizard's saved status (a function, so a read after an await is not narrowed by an assignment before it). */
  const shownStatus = (): WizardState['status'] | undefined => state.value?.status;

  /** The phase of the last progress event taken: the state is re-read when it changes. */
  let phase: OptimiseProgress['phase'] | null = null;

  /** Takes one progress event of the shown wizard into the view. */
  function take(p: OptimiseProgress): void {
    if (p.jobId !== jobId.value) return;
    progress.value = p;
    if (p.phase !== 'preparing') preparingData.value = null;
    if (p.finishedTrial) trials.value = mergeTrials(trials.value, [p.finishedTrial]);
    // The state carries what progress does not (baseline, diagnosis, limits, the best so far): read it when it changes.
    if (p.phase !== phase || p.finishedTrial) void loadState(p.jobId);
    phase = p.phase;
  }

  /** The wizard run as a job (started here, or re-attached): its progress events, replayed ones first, come through it. */
  const job = useJob({ 'optimise.progress': (p) => take(p) });

  /** Takes a watched wizard's progress events into the view (one not followed as a job: a CLI's); returns the unsubscribe. */
  function listen(id: string): () => void {
    phase = null;
    return useApiClient().on('optimise.progress', (p) => {
      if (p.target === 'engine' && p.jobId === id) take(p);
    });
  }

  let stopWatch: (() => void) | null = null;

  function unwatch(): void {
    stopWatch?.();
    stopWatch = null;
    watching.value = false;
  }

  /**
   * Watches a wizard that runs elsewhere: its events (another window of this server) and its saved state
   * every WATCH_INTERVAL_MS (the CLI's wizard sends no events here), until it stops running or another is shown.
   */
  function watchElsewhere(id: string): void {
    unwatch();
    watching.value = true;
    const off = listen(id);
    let polls = 0;
    // Called only after the interval below exists.
    const stop = () => {
      off();
      clearInterval(timer);
    };
    const stillRunning = async (): Promise<boolean> => {
      await loadState(id);
      if (jobId.value !== id || shownStatus() !== 'running') return false;
      // A process that died leaves its state 'running': the run's heartbeat tells (every 10th poll, it costs a list).
      if (++polls % 10 !== 0) return true;
      await refreshPast();
      return past.value.find((p) => p.jobId === id)?.status === 'running';
    };
    const timer = setInterval(() => {
      void stillRunning().then((yes) => {
        if (yes || stopWatch !== stop) return;
        unwatch();
        progress.value = null;
        void refreshPast();
      });
    }, WATCH_INTERVAL_MS);
    stopWatch = stop;
  }

  /** A job's answer, or its failure thrown (useJob answers null and keeps the error). */
  async function answerOf(done: Promise<OptimiseResult | null>): Promise<OptimiseResult> {
    const answer = await done;
    if (answer === null) throw job.failure.value ?? new ApiError('E_INTERNAL', 'the optimisation ended without an answer');
    return answer;
  }

  /**
   * Shows wizard `id` and follows it until `done` settles (its events come through the job); whatever
   * the end, the state is re-read and the list read again.
   */
  async function follow(id: string, done: Promise<OptimiseResult>): Promise<void> {
    unwatch();
    if (jobId.value !== id) {
      state.value = null;
      trials.value = [];
    }
    jobId.value = id;
    running.value = true;
    error.value = null;
    cancelled.value = false;
    result.value = null;
    progress.value = null;
    phase = null;
    // The data's own progress, while the wizard prepares it: its events name the dataset's job, not the wizard's, so
    // those that come before the wizard's baseline are taken as its own (issue 41 item 7: 25 s at "0:00, ETA –").
    const offData = useApiClient().on('datasets.progress', (d) => {
      if (jobId.value === id && (!progress.value || progress.value.phase === 'preparing')) preparingData.value = d;
    });
    try {
      result.value = await done;
    } catch (err) {
      cancelled.value = err instanceof ApiError && err.code === 'E_CANCELLED';
      error.value = cancelled.value ? null : errorText(err);
    } finally {
      offData();
      preparingData.value = null;
      running.value = false;
      progress.value = null;
      await loadState(id);
      // The person's own cancel is not an error: said plainly, with what they can do in the app (issue 27).
      // The state is saved after the baseline and after each trial: a cancel inside the baseline keeps nothing to go on from.
      if (cancelled.value) error.value = cancelledWords(trials.value.length, state.value?.baseline != null || trials.value.length > 0);
      void refreshPast();
    }
  }

  /**
   * A batch-size search's answer into the form (Batch size's Apply): its model's recipe with the batch found,
   * the data and device it was found for and, on the CPU, the memory limit it filled (so the wizard's own search
   * can run too); how the wizard measures stays as chosen. Refused (false) while a wizard runs from this window.
   */
  function applyBatchSearch(v: BatchApplyValues): boolean {
    // Not while one runs or is watched: its form shows what it runs and would overwrite these on its next read.
    if (running.value || watching.value) return false;
    const { readFrom, preset, repeat, steps, warmupSteps, minWindowSeconds, maxTrials, allowRecipeChanges, batchSearch, confounders } = form.value;
    form.value = {
      ...optimiseFormValues(v.model, { data: v.data, device: v.device }, v.family),
      ...{ readFrom, preset, repeat, steps, warmupSteps, minWindowSeconds, maxTrials, allowRecipeChanges, batchSearch, confounders },
      batchSize: v.batchSize,
      accumulation: v.accumulation,
      memoryLimitMiB: v.memoryLimitMiB,
      // A CPU limit comes with its search: the box a CPU form opens unticked with is ticked for it.
      batchSearch: batchSearch || v.memoryLimitMiB !== null,
    };
    invalid.value = {};
    applied.value = `batch-size search ${v.runId}`;
    target.value = 'engine';
    return true;
  }

  /**
   * A script's batch-size search answer into the Script target's form (Batch size's Apply): the command it searched,
   * with the batch found as its dataloader.batch_size override; how the wizard measures stays as chosen.
   * Refused (false) while a script wizard runs from this window.
   */
  function applyScriptBatchSearch(v: ScriptBatchApplyValues): boolean {
    if (script.running.value) return false;
    script.form.value = withScriptBatch(script.form.value, v);
    script.pending.value = null;
    applied.value = `batch-size search ${v.runId}`;
    target.value = 'script';
    return true;
  }

  /** Checks the form with the contract's schema, then runs a new wizard from it (its id is the job's); `spec` for a model that is no built-in. */
  async function start(spec: ModelSpec | null = null): Promise<void> {
    if (running.value) return;
    applied.value = null;
    attachedRequest.value = null;
    const checked = optimiseRequest(form.value, undefined, spec);
    invalid.value = checked.errors ?? {};
    if (!checked.request) return;
    state.value = null;
    trials.value = [];
    const done = job.start('optimise.start', checked.request);
    // The job has its id (the wizard's) from the call on: shown at once, so its first event is taken.
    await follow(job.jobId.value!, answerOf(done));
  }

  /** Continues a cancelled or interrupted wizard from its saved state, showing what it had already; the job keeps the wizard's id. */
  async function resume(id: string): Promise<void> {
    if (running.value) return;
    attachedRequest.value = null;
    if (jobId.value !== id) {
      state.value = null;
      trials.value = [];
    }
    jobId.value = id;
    await loadState(id);
    if (running.value) return;
    await follow(id, answerOf(job.start('optimise.resume', { jobId: id })));
  }

  /** Follows a wizard started elsewhere (before a reload, in another window) to its end: its trials so far, then live ones. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value || (info.method !== 'optimise.start' && info.method !== 'optimise.resume')) return;
    // A resume's request names only the wizard: its saved state has the request, read below.
    const parsed = OptimiseRequestSchema.safeParse(info.request);
    attachedRequest.value = parsed.success ? parsed.data : null;
    const done = job.attach({ ...info, method: info.method });
    const following = follow(info.jobId, answerOf(done));
    // The saved state has the baseline, the diagnosis and the trials so far (and a resumed wizard's request, for the
    // form); the replayed events bring the latest progress.
    void loadState(info.jobId).then(() => {
      if (attachedRequest.value === null && jobId.value === info.jobId && running.value && state.value) attachedRequest.value = state.value.request;
    });
    await following;
  }
  useJobsStore().adopt('optimise', 'engine', (info) => void attach(info));

  /** Stops the running (or watched) wizard at once; the trial in progress is run again on resume. */
  async function cancel(): Promise<void> {
    const id = jobId.value;
    if (!(running.value || watching.value) || !id) return;
    if (job.running.value) {
      await job.cancel();
      // Its own cancel is said by follow() when the job ends; any other failure is shown as it is.
      if (job.error.value && job.failure.value?.code !== 'E_CANCELLED') error.value = job.error.value;
      return;
    }
    try {
      // A resumed or watched wizard's job has the wizard's id.
      const { cancelled: stopped } = await useApiClient().call('jobs.cancel', { jobId: id });
      // Only the process that drives a wizard can stop it: a CLI's wizard is not this server's to cancel.
      if (!stopped && watching.value) error.value = `optimisation ${id} is not running in this server (it runs in a trainbench optimise process): stop that process, then resume it here`;
    } catch (err) {
      error.value = errorText(err);
    }
  }

  /** Shows a saved wizard (not while one runs from this window); one that runs elsewhere is watched live. */
  async function open(id: string): Promise<void> {
    if (running.value) return;
    attachedRequest.value = null;
    unwatch();
    jobId.value = id;
    state.value = null;
    trials.value = [];
    result.value = null;
    progress.value = null;
    error.value = null;
    cancelled.value = false;
    await loadState(id);
    // A job re-attached meanwhile is followed live, not watched.
    if (running.value) return;
    if (jobId.value === id && shownStatus() === 'running' && past.value.find((p) => p.jobId === id)?.status === 'running') watchElsewhere(id);
  }

  /**
   * The first-run path (the Dashboard of an empty workspace): the form on the built-in example as
   * `npm start` optimises it, or the Script target; nothing starts, the person presses Optimise.
   * Refused (false) while a wizard runs from this window.
   */
  function choose(kind: 'example' | 'script', devices: Devices | null): boolean {
    if (running.value || script.running.value) return false;
    invalid.value = {};
    applied.value = null;
    if (kind === 'example') form.value = exampleOptimiseForm(devices);
    target.value = kind === 'example' ? 'engine' : 'script';
    return true;
  }

  /** The script side; the switch follows whichever side's wizard runs, and the list is read again when a script's ends (the engine side reads it itself). */
  const script = scriptOptimise();
  followRunningTarget(target, { engine: running, script: script.running }, (kind) => kind === 'script' && void refreshPast());

  return { script, target, form, invalid, applied, applyBatchSearch, applyScriptBatchSearch, attachedRequest, jobId, state, trials, progress, preparingData, result, running, watching, error, cancelled, past, pastLoading, pastError, refreshPast, start, resume, attach, cancel, open, choose };
});

/** What a person's own cancel of the engine wizard leaves, in words: Resume goes on from the saved baseline and trials, or starts again. */
export function cancelledWords(trials: number, baselineSaved: boolean): string {
  if (!baselineSaved) return 'Cancelled before the baseline was measured in full: nothing was kept, and Resume in the list below measures the baseline again.';
  return `Cancelled after ${trials} trial${trials === 1 ? '' : 's'}. The baseline and every finished trial are kept: Resume in the list below goes on from there (a trial that was running is measured again).`;
}
