import type { JobInfo, JobKind } from '@api/jobs';
import type { ScriptOutputEvent } from '@api/script-target';
import type { Ref, ShallowRef } from 'vue';
import { ref, shallowRef } from 'vue';

import { useJobsStore } from '../stores/jobs';
import type { JobEventHandlers } from './useJob';
import { useJob } from './useJob';

type Job = ReturnType<typeof useJob>;

/** Lines of output kept: a long run would otherwise grow the page without bound. */
export const SCRIPT_OUTPUT_LINES = 3000;

export interface ScriptLine {
  n: number;
  stream: 'stdout' | 'stderr';
  repetition: number;
  line: string;
}

/** A job's output as the page shows it: its last SCRIPT_OUTPUT_LINES lines, numbered as they came. */
export function scriptOutputBuffer() {
  const lines = shallowRef<ScriptLine[]>([]);
  let count = 0;
  return {
    lines,
    clear(): void {
      lines.value = [];
      count = 0;
    },
    push(e: Pick<ScriptOutputEvent, 'stream' | 'repetition' | 'line'>): void {
      count += 1;
      const next = [...lines.value, { n: count, stream: e.stream, repetition: e.repetition, line: e.line }];
      lines.value = next.length > SCRIPT_OUTPUT_LINES ? next.slice(next.length - SCRIPT_OUTPUT_LINES) : next;
    },
  };
}

export interface ScriptJobOptions<Req, Res> {
  /** The kind of job it is (the jobs store hands such script jobs, re-attached, to this side). */
  kind: JobKind;
  handlers: JobEventHandlers;
  /** The request the form describes, checked; throws with the bad field named. */
  request: () => Req;
  /** Starts the confirmed request, and follows a job started elsewhere, through the shared method. */
  start: (job: Job, request: Req) => Promise<Res | null>;
  attach: (job: Job, info: JobInfo) => Promise<Res | null>;
  /** Clears what the side shows of the previous job, as a new one starts. */
  clear: () => void;
  /** After a job that answered: what the side does with the answer. */
  done?: (result: Res) => Promise<void> | void;
}

/**
 * A job of the user's command as an area's Script side runs it: the request waiting for "Run this
 * command?", then the job followed to its end (started here, or re-attached after a reload or from
 * another window), its answer, its error, the shell's refusal of scripts, and Cancel.
 */
export function useScriptJob<Req, Res>(o: ScriptJobOptions<Req, Res>) {
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<Req | null>(null) as ShallowRef<Req | null>;
  const result = shallowRef<Res | null>(null) as ShallowRef<Res | null>;
  /** True from "Run" (or attaching) to the end of the job. */
  const running = ref(false);
  const error: Ref<string | null> = ref(null);
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden: Ref<string | null> = ref(null);
  const job = useJob(o.handlers);

  /** Checks the form and asks for confirmation; nothing runs yet. */
  function prepare(): void {
    error.value = null;
    try {
      pending.value = o.request();
    } catch (err) {
      pending.value = null;
      error.value = err instanceof Error ? err.message : String(err);
    }
  }

  function dismiss(): void {
    pending.value = null;
  }

  /** Follows one job to its end: its answer, or its error or refusal. */
  async function watch(follow: () => Promise<Res | null>): Promise<void> {
    o.clear();
    result.value = null;
    error.value = null;
    forbidden.value = null;
    running.value = true;
    try {
      result.value = await follow();
      const failure = job.failure.value;
      if (failure?.code === 'E_FORBIDDEN') forbidden.value = failure.message;
      else if (failure) error.value = job.error.value;
      if (result.value !== null) await o.done?.(result.value);
    } finally {
      running.value = false;
    }
  }

  /** Runs the confirmed request; resolves when it ends. */
  async function confirm(): Promise<void> {
    const request = pending.value;
    if (request === null || running.value) return;
    pending.value = null;
    await watch(() => o.start(job, request));
  }

  /** Follows a job started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    pending.value = null;
    await watch(() => o.attach(job, info));
  }
  useJobsStore().adopt(o.kind, 'script', (info) => void attach(info));

  /** Stops the job: the launch in flight is killed with its process group, and the run is recorded cancelled. */
  async function cancel(): Promise<void> {
    if (!running.value) return;
    await job.cancel();
    if (job.error.value) error.value = job.error.value;
  }

  return { pending, result, running, error, forbidden, failure: job.failure, cancelled: job.cancelled, jobId: job.jobId, cancelling: job.cancelling, attached: job.attached, prepare, dismiss, confirm, attach, cancel };
}
