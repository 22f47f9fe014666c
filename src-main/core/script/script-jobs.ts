import { randomBytes } from 'node:crypto';

import { ApiError } from '../../api/errors';

/** One running script job (a benchmark, a batch search, a wizard, a run): cancel kills the launch in flight. */
export interface ScriptJob {
  readonly id: string;
  cancelled: boolean;
  /** Set while a launch runs (from runTrial's onStarted), cleared after it. */
  cancel: (() => void) | null;
}

/**
 * Every script job of one workbench, whatever started it, so one `script.cancel`
 * reaches each and closing the shell kills them all: a user's process must never
 * outlive the app that started it.
 */
export class ScriptJobs {
  private readonly jobs = new Map<string, ScriptJob>();

  open(jobId: string | undefined, what: string): ScriptJob {
    const id = jobId ?? `script-${randomBytes(6).toString('hex')}`;
    if (this.jobs.has(id)) throw new ApiError('E_BAD_INPUT', `${what} ${id} is already running: choose another jobId`);
    const job: ScriptJob = { id, cancelled: false, cancel: null };
    this.jobs.set(id, job);
    return job;
  }

  close(job: ScriptJob): void {
    if (this.jobs.get(job.id) === job) this.jobs.delete(job.id);
  }

  /** Wires a launch's kill into its job: kills at once when cancel came before the process started. */
  started(job: ScriptJob, cancel: () => void): void {
    job.cancel = cancel;
    if (job.cancelled) cancel();
  }

  /** Kills the job's running launch (its process group); the job records itself as cancelled. */
  cancel(jobId: string): { cancelled: boolean } {
    const job = this.jobs.get(jobId);
    if (!job) return { cancelled: false };
    job.cancelled = true;
    job.cancel?.();
    return { cancelled: true };
  }

  cancelAll(): void {
    for (const id of [...this.jobs.keys()]) this.cancel(id);
  }

  get running(): number {
    return this.jobs.size;
  }
}
