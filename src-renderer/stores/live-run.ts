import type { StepPoint } from '@api/charts/run-charts';
import { appendScriptRunPoint } from '@api/charts/run-charts';
import type { JobInfo, TargetKind } from '@api/jobs';
import type { EngineTrainRun, ScriptProgressEvent, ScriptTrainRun } from '@api/train-result';
import { ScriptTrainRequestSchema, type ScriptTrainRequestInput } from '@api/script-target';
import type { ScriptOutputEvent } from '@api/script-target';
import type { GpuState } from '@api/telemetry';
import type { TrainPreparingEvent, TrainRequest, TrainStepEvent } from '@api/training';
import { TrainRequestSchema } from '@api/training';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { followRunningTarget } from '../composables/useTargetSwitch';
import { useApiClient } from '../transport/client-instance';
import { useJobsStore } from './jobs';
import { useRunsStore } from './runs';
import type { ScriptLine } from '../composables/useScriptJob';
import { SCRIPT_OUTPUT_LINES } from '../composables/useScriptJob';
import type { LiveCurve } from '../view-models/live-curve';
import { appendStep, emptyLiveCurve } from '../view-models/live-curve';
import { emptyScriptRunForm, scriptRunFormOf } from '../view-models/script-target-form';
import type { ScriptForm } from '../view-models/script-target-form';

/** How often the run's telemetry lease is renewed (the telemetry store's pace). */
const LEASE_RENEW_MS = 5000;

/** One telemetry sample of the run's GPU, for its timeline. */
export interface RunGpuPoint {
  t: number;
  utilization: number | null;
  memoryMiB: number | null;
  powerW: number | null;
}

/** How often arrived output lines are handed to the page: a script printing every step writes thousands a second. */
const OUTPUT_FLUSH_MS = 100;

/**
 * The live run's part that only a script's run has: confirmation ("Run this command?"), its own progress
 * points (samples/s, data wait, loss), its live output, the shell's refusal. The area's one store below
 * holds it as `script`, beside what the engine's run reports; one started here, or one running when the
 * window opened (re-attached through the jobs store).
 */
function scriptRun() {
  /** The New run form's Script target: kept here, so Batch size's Apply can fill it and a re-attached run shows what it runs. */
  const form = ref<ScriptForm>(emptyScriptRunForm());
  /** Where the form's values came from when another area applied them ("batch-size search <run id>"); null once a run starts. */
  const applied = ref<string | null>(null);
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptTrainRequestInput | null>(null);
  /** The newest progress point; the full series go to listeners (charts append). */
  const last = shallowRef<ScriptProgressEvent | null>(null);
  const output = shallowRef<ScriptLine[]>([]);
  const result = shallowRef<ScriptTrainRun | null>(null);
  const listeners = new Set<(p: ScriptProgressEvent) => void>();
  /** The run's curves so far (plain arrays: charts append), kept here so a chart mounted later draws them whole. */
  let curves = { rate: [] as StepPoint[], dataWait: [] as StepPoint[], loss: [] as StepPoint[] };
  let count = 0;
  let arrived: ScriptLine[] = [];

  const job = useJob({
    'script.output': (e: ScriptOutputEvent) => {
      arrived.push({ n: ++count, stream: e.stream, repetition: e.repetition, line: e.line });
      if (arrived.length > SCRIPT_OUTPUT_LINES) arrived = arrived.slice(arrived.length - SCRIPT_OUTPUT_LINES);
    },
    'script.progress': (p) => {
      last.value = p;
      appendScriptRunPoint(curves, p);
      for (const l of listeners) l(p);
    },
  });
  const { running, cancelling, error } = job;
  /** The run's id, chosen before it starts, so its events and Cancel are this run's only. */
  const runId = job.jobId;
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden = computed(() => (job.failure.value?.code === 'E_FORBIDDEN' ? job.failure.value.message : null));

  function ask(request: ScriptTrainRequestInput): void {
    job.error.value = null;
    job.failure.value = null;
    pending.value = request;
  }
  function dismiss(): void {
    pending.value = null;
  }

  /** Collects the run's output (handed to the page in batches: a script may print thousands of lines a second) while `follow` lasts. */
  async function watch(follow: () => Promise<ScriptTrainRun | null>): Promise<ScriptTrainRun | null> {
    last.value = null;
    result.value = null;
    output.value = [];
    curves = { rate: [], dataWait: [], loss: [] };
    count = 0;
    arrived = [];
    const flush = () => {
      if (arrived.length === 0) return;
      const next = output.value.concat(arrived);
      arrived = [];
      output.value = next.length > SCRIPT_OUTPUT_LINES ? next.slice(next.length - SCRIPT_OUTPUT_LINES) : next;
    };
    const timer = setInterval(flush, OUTPUT_FLUSH_MS);
    try {
      result.value = await follow();
      return result.value;
    } finally {
      clearInterval(timer);
      flush();
    }
  }

  /** Runs the confirmed request to its end, following this run's events only. */
  async function confirm(): Promise<ScriptTrainRun | null> {
    const request = pending.value;
    if (!request || running.value) return null;
    pending.value = null;
    applied.value = null;
    return watch(() => job.start('train.run', request));
  }

  /** Follows a script run started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    // The fields show what runs (greyed out while it does), and stay to run it again.
    const request = ScriptTrainRequestSchema.safeParse(info.request);
    if (request.success) form.value = scriptRunFormOf(request.data);
    await watch(() => job.attach({ ...info, method: 'train.run', target: 'script' as const }));
  }
  useJobsStore().adopt('train', 'script', (info) => void attach(info));

  /** Kills the run's process tree; the run is recorded as cancelled. */
  async function cancel(): Promise<void> {
    await job.cancel();
  }

  function onProgress(l: (p: ScriptProgressEvent) => void): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  }

  return { form, applied, curves: () => curves, pending, running, runId, last, output, result, error, cancelled: job.cancelled, forbidden, cancelling, attached: job.attached, ask, dismiss, confirm, attach, cancel, onProgress };
}

/**
 * The Runs area's training run, either target (the engine's here, what only a script's has in `script`): the run this window follows, one it started, or one running when it opened (a
 * reload, another window), re-attached through the jobs store.
 */
export const useLiveRunStore = defineStore('live-run', () => {
  /** True from Start (or attaching) to the end, including the telemetry lease's setup. */
  const running = ref(false);
  /** The run's id once its first train.progress event arrived (the id is chosen at start, see requestedId). */
  const runId = ref<string | null>(null);
  /** When the first step event arrived and its step: the rate is measured from there, after data preparation. */
  let first: { at: number; step: number } | null = null;
  /** The newest step event; the full series go to listeners (charts append, nothing is rebuilt). */
  const last = shallowRef<TrainStepEvent | null>(null);
  /**
   * The run's loss and accuracy so far (plain arrays: charts append), from its first logged step: a chart mounted
   * later (the area opened again, a reload) draws the whole run, not a line from where it joined.
   */
  let curve: LiveCurve = emptyLiveCurve();
  /** The request of the run followed (started here or re-attached): what the New run form shows while it runs. */
  const runRequest = shallowRef<TrainRequest | null>(null);
  const result = shallowRef<EngineTrainRun | null>(null);
  /** Before the first step: what is being prepared (caching the data, the engine checking the request). */
  const preparing = shallowRef<TrainPreparingEvent | null>(null);
  /** The device the run trains on: 'cpu' or 'cuda:N'. */
  const device = ref('cpu');

  /** nvidia-smi's state while the run trains ("no NVIDIA GPU found" on a machine without one). */
  const gpu = ref<GpuState>({ status: 'starting', message: null, restarts: 0 });

  const stepListeners = new Set<(e: TrainStepEvent) => void>();
  const gpuListeners = new Set<(p: RunGpuPoint) => void>();

  const job = useJob({
    'train.preparing': (p) => {
      if (!last.value) preparing.value = p;
    },
    'train.progress': ({ jobId: id, event }) => {
      runId.value = id;
      if (event.type === 'step') takeStep(event);
    },
  });

  /** One step, once: the run's recorded steps, the job's replay and its live events overlap on re-attaching. */
  function takeStep(event: TrainStepEvent): void {
    if (!appendStep(curve, event)) return;
    if (first === null || event.globalStep < first.step) first = { at: event.t ?? Date.now(), step: event.globalStep };
    // A step that came late (a replay behind a live one) fills the curve; the newest stays the newest.
    if (last.value === null || event.globalStep > last.value.globalStep) last.value = event;
    for (const l of stepListeners) l(last.value);
  }

  /**
   * The curve so far of a run this window joins late, from its recorded events (the job's replay keeps only its
   * newest events, and none of the steps before a page that opened later listed it). A run not recorded yet has none.
   */
  async function readHistory(id: string): Promise<void> {
    try {
      const detail = await useApiClient().call('runs.get', { id });
      const steps = detail.events.filter((e): e is TrainStepEvent => e.type === 'step');
      if (steps.length === 0) return;
      // Merged with the live steps that came while the record was read (they were dropped before: the curve then
      // started where the page joined).
      for (const s of steps) appendStep(curve, s);
      if (first === null || steps[0].globalStep < first.step) first = { at: steps[0].t ?? Date.now(), step: steps[0].globalStep };
      runId.value = id;
      const newest = steps.at(-1)!;
      if (last.value === null || newest.globalStep > last.value.globalStep) last.value = newest;
      for (const l of stepListeners) l(last.value!);
    } catch {
      // Not recorded yet (still preparing its data): the replay and the live steps draw it.
    }
  }
  /** The id of the run (chosen before it starts): Cancel works with it from the start, while the data is prepared. */
  const requestedId = job.jobId;
  /** A message a person can act on, with the error code (E_CANCELLED when cancelled). */
  const error = job.error;
  const cancelling = job.cancelling;

  /**
   * A telemetry lease of the run's own, renewed while it trains, so the run's GPU timeline
   * does not depend on the Dashboard's panel being open. Returns how to end it.
   */
  async function telemetryLease(): Promise<() => void> {
    const client = useApiClient();
    let leaseId: string | undefined;
    const renew = async () => {
      const r = await client.call('telemetry.subscribe', { intervalMs: 500, historySeconds: 0, leaseId });
      leaseId = r.leaseId;
      gpu.value = r.gpu;
    };
    await renew().catch(() => undefined);
    const timer = setInterval(() => void renew().catch(() => undefined), LEASE_RENEW_MS);
    return () => {
      clearInterval(timer);
      if (leaseId) void client.call('telemetry.unsubscribe', { leaseId }).catch(() => undefined);
    };
  }

  /** Seconds left at the rate since the first step event (preparing the data is not counted). */
  const etaSeconds = computed(() => {
    const e = last.value;
    if (!e || !first || e.globalStep <= first.step) return null;
    // From the events' own times where they carry them: replayed steps arrive at once, not at the pace they ran.
    const secondsPerStep = ((e.t ?? Date.now()) - first.at) / 1000 / (e.globalStep - first.step);
    return secondsPerStep * (e.totalSteps - e.globalStep);
  });

  /** Follows one run on `deviceName` (its steps through the job, its GPU through a lease) while `follow` lasts. */
  async function watch(deviceName: string, follow: () => Promise<EngineTrainRun | null>): Promise<EngineTrainRun | null> {
    running.value = true;
    runId.value = null;
    last.value = null;
    curve = emptyLiveCurve();
    result.value = null;
    preparing.value = null;
    device.value = deviceName;
    gpu.value = { status: 'starting', message: null, restarts: 0 };
    first = null;
    const client = useApiClient();
    const gpuIndex = deviceName.startsWith('cuda:') ? Number(deviceName.slice('cuda:'.length)) : null;
    const offSample = client.on('telemetry.sample', (s) => {
      const g = s.gpus.find((x) => x.index === gpuIndex);
      if (!g) return;
      const p = { t: s.t, utilization: g.utilizationGpu, memoryMiB: g.memoryUsedMiB, powerW: g.powerDrawW };
      for (const l of gpuListeners) l(p);
    });
    const offGpu = client.on('telemetry.gpu', (state) => (gpu.value = state));
    const stopLease = await telemetryLease();
    try {
      result.value = await follow();
      return result.value;
    } finally {
      preparing.value = null;
      offSample();
      offGpu();
      stopLease();
      running.value = false;
    }
  }

  /** Trains to completion (or cancel/failure), following the events of this run only. */
  async function start(request: TrainRequest): Promise<EngineTrainRun | null> {
    if (running.value) return null;
    const started = watch(request.options.device, () => job.start('train.run', request));
    runRequest.value = request;
    return started;
  }

  /** Follows a run started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value || info.method !== 'train.run') return;
    const parsed = TrainRequestSchema.safeParse(info.request);
    const followed = watch(parsed.data?.options.device ?? 'cpu', async () => {
      // Listening first, then reading the record: every step is then in one or the other, whatever the replay
      // holds (read before listening, a step logged between the two reads was in neither when the replay was stale).
      const [result] = await Promise.all([job.attach({ ...info, method: 'train.run' }), readHistory(info.jobId)]);
      return result;
    });
    runRequest.value = parsed.data ?? null;
    await followed;
  }
  useJobsStore().adopt('train', 'engine', (info) => void attach(info));

  /** Asks the engine to stop the run at its next step; the run is kept as cancelled. */
  async function cancel(): Promise<void> {
    if (!running.value) return;
    await job.cancel();
  }

  function onStep(l: (e: TrainStepEvent) => void): () => void {
    stepListeners.add(l);
    return () => stepListeners.delete(l);
  }
  function onGpu(l: (p: RunGpuPoint) => void): () => void {
    gpuListeners.add(l);
    return () => gpuListeners.delete(l);
  }

  /** Which target the New run form shows: it follows whichever side's run starts (here, re-attached, or elsewhere); the list is read when one ends. */
  const target = ref<TargetKind>('engine');
  const script = scriptRun();
  followRunningTarget(target, { engine: running, script: script.running }, () => void useRunsStore().refresh());

  return { target, running, runId, requestedId, request: runRequest, curve: () => curve, preparing, last, result, error, cancelled: job.cancelled, cancelling, device, gpu, etaSeconds, attached: job.attached, start, attach, cancel, onStep, onGpu, script };
});
