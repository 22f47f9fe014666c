import type { JobInfo } from '@api/jobs';
import type { OptimiseProgress, OptimiseTrial } from '@api/optimise';
import type { ScriptOptimiseBaselineEvent } from '@api/script-target';
import type { ScriptOptimiseRequestInput, ScriptOutputEvent } from '@api/script-target';
import { ScriptOptimiseRequestSchema } from '@api/script-target';
import { ref, shallowRef } from 'vue';

import type { ScriptWizardValues } from '../view-models/script-optimise-form';
import { formFromRequest, scriptOptimiseForm, scriptOptimiseRequest, scriptWizardValues, wizardFromRequest } from '../view-models/script-optimise-form';
import type { ScriptOptimiseRun } from '../view-models/script-past';
import { scriptOptimiseRun } from '../view-models/script-past';
import { useJob } from '../composables/useJob';
import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { scriptOutputBuffer } from './script';
import type { ScriptForm } from './script-form';

/** How often the run of a script wizard that runs elsewhere (another window, the CLI) is re-read. */
export const SCRIPT_WATCH_INTERVAL_MS = 2000;

/** The trials of both lists, one per index (a live event and a run read may carry the same trial). */
function mergeTrials(a: readonly OptimiseTrial[], b: readonly OptimiseTrial[]): OptimiseTrial[] {
  const byIndex = new Map<number, OptimiseTrial>();
  for (const t of [...a, ...b]) byIndex.set(t.index, t);
  return [...byIndex.values()].sort((x, y) => x.index - y.index);
}

/**
 * The Optimise area's Script side (the area's one store, stores/optimise.ts, holds it beside the engine's): the form, "Run this command?", the wizard running from this
 * window or re-attached after a reload or from another window through the jobs store (its progress,
 * trials and the script's output as they arrive), Cancel, the refusal of a shell that does not run
 * scripts, and a past script optimisation opened from the list.
 */
export function scriptOptimise() {
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

  /** The wizard run as a job (started here, or re-attached): its events, replayed ones first, come through it. */
  const job = useJob({ 'optimise.progress': takeProgress, 'script.optimiseBaseline': takeBaseline, 'script.output': takeOutput });

  /** Takes the events of a job this window does not follow as one (a wizard watched from the list); returns the unsubscribe. */
  function listen(id: string, runId: string | null): () => void {
    const client = useApiClient();
    followedRun = runId;
    const offs = [
      client.on('optimise.progress', (p) => p.optimiseId === id && takeProgress(p)),
      client.on('script.optimiseBaseline', (e) => e.jobId === id && takeBaseline(e)),
      client.on('script.output', (e) => e.jobId === id && takeOutput(e)),
    ];
    return () => offs.forEach((off) => off());
  }

  /** Re-reads a run; a read for a wizard no longer shown is dropped. */
  async function loadRun(runId: string): Promise<ScriptOptimiseRun | null> {
    const client = useApiClient();
    let run = scriptOptimiseRun(await client.call('runs.get', { id: runId }));
    if (run === null) throw new Error(`run ${runId} is not a script optimisation`);
    // Running, or killed: run.json has no result; the state saved after the baseline and each trial has what it measured.
    if (run.record === null) run = { ...run, record: await client.call('script.optimiseState', { runId }) };
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
    // optimise.start names the wizard's id as the engine's does; the script form calls it jobId.
    const { jobId: optimiseId, ...rest } = request;
    await follow(() => job.start('optimise.start', { ...rest, optimiseId }));
  }

  /** Follows a wizard started elsewhere (before a reload, in another window): its output, baseline and trials so far, then live ones. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    // Started as optimise.start (the id in optimiseId) or by its old name script.optimise (in jobId).
    const { optimiseId, ...asked } = (info.request ?? {}) as { optimiseId?: string };
    const request = ScriptOptimiseRequestSchema.safeParse(optimiseId === undefined ? asked : { ...asked, jobId: optimiseId });
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
    form, wizard, pending, started, jobId, shown, progress, liveBaseline, trials, output, running, watching, error, cancelled, forbidden, attached: job.attached,
    prepare, dismiss, resume, confirm, attach, cancel, open,
  };
}
