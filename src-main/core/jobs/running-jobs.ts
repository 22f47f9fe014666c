import { ApiError } from '../../api/errors';
import { newJobId } from '../../api/ids';

/** One running job of this process (a training run, a benchmark, a batch search, a wizard, either target). */
export interface RunningJob {
  readonly id: string;
  /** What a person calls it ("script benchmark"), for a refusal of its id. */
  readonly what?: string;
  /** Set by a cancel: the job's loop checks it between its steps, repetitions or trials. */
  cancelled: boolean;
  /** What stops the piece of work in flight (an engine run, a script launch's process group), while one runs. */
  cancel: (() => unknown) | null;
  /** Past its last cancellation point (closedToCancel): a cancel then is answered not taken. */
  closed?: boolean;
}

/**
 * A job's last cancellation point, before it records what it finished: true when a cancel came first (the job
 * then ends cancelled); after it, every cancel is answered not taken, since nothing would look at it again
 * (re-attack 12: a cancel while a finished training run was being recorded was answered taken, and the run
 * was recorded completed).
 */
export function closedToCancel(job: RunningJob): boolean {
  if (job.cancelled) return true;
  job.closed = true;
  return false;
}

/**
 * Every job of one workbench, whatever started it (the router, the CLI, a wizard's own search), so one
 * `jobs.cancel` reaches each and closing the shell stops them all: a user's process must never outlive
 * the app that started it, and an engine run never outlives its job.
 */
export class RunningJobs {
  private readonly jobs = new Map<string, RunningJob>();

  /** Opens a job under its id (a new one when absent); an id that runs already is refused, naming the job that holds it. */
  open(jobId: string | undefined, what: string): RunningJob {
    const id = jobId ?? newJobId();
    this.refuseTaken(id, what);
    const job: RunningJob = { id, what, cancelled: false, cancel: null };
    this.jobs.set(id, job);
    return job;
  }

  /** Throws when a job of this id runs here, naming the job that holds it (`what` only where it has no name). */
  refuseTaken(jobId: string, what = 'a job with the id'): void {
    const holder = this.jobs.get(jobId);
    if (holder) throw new ApiError('E_BAD_INPUT', `${holder.what ?? what} ${jobId} is already running: choose another jobId`);
  }

  close(job: RunningJob): void {
    if (this.jobs.get(job.id) === job) this.jobs.delete(job.id);
  }

  /** Wires the work in flight into its job: stopped at once when the cancel came before it started. */
  started(job: RunningJob, cancel: () => unknown): void {
    job.cancel = cancel;
    if (job.cancelled) cancel();
  }

  /** Marks the job cancelled and stops its work in flight; false when no job of that id runs here. */
  async cancel(jobId: string): Promise<{ cancelled: boolean }> {
    const job = this.jobs.get(jobId);
    if (!job || job.closed) return { cancelled: false };
    job.cancelled = true;
    await Promise.resolve(job.cancel?.()).catch(() => undefined);
    return { cancelled: true };
  }

  cancelAll(): void {
    for (const id of [...this.jobs.keys()]) void this.cancel(id);
  }

  has(jobId: string): boolean {
    return this.jobs.has(jobId);
  }

  get running(): number {
    return this.jobs.size;
  }
}
