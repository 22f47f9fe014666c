import type { EventName } from '../../api/events';
import type { JobEvent, JobInfo, JobKind, JobMethod } from '../../api/jobs';
import { JOB_METHODS, isJobEventName, jobIdOfEvent, jobTargetOf } from '../../api/jobs';
import { ApiError, toApiError } from '../../api/errors';
import type { EventHub } from '../common/event-hub';

/** How many events of one name a job keeps for windows that attach later: enough to redraw a run's curves. */
const KEPT_PER_EVENT = 1000;
/** Output lines are many and only the last screenful matters to a window that attaches. */
const KEPT_OUTPUT_LINES = 300;

/** How a refusal names the job that holds an id. */
const KIND_WORDS: Record<JobKind, string> = {
  train: 'training run',
  benchmark: 'benchmark',
  batchSize: 'batch-size search',
  optimise: 'optimisation',
  dataset: 'dataset build',
  loader: 'loader benchmark',
};

type Cancel = (jobId: string) => Promise<{ cancelled: boolean }> | { cancelled: boolean };

interface LiveJob {
  info: Omit<JobInfo, 'events'>;
  cancel: Cancel;
  /** Whether its service took a cancel: from then on the job is shown cancelling. */
  taken: boolean;
  /** Settles once the work was handed the job and opened it with its service: cancels wait for it. */
  opened: Promise<void>;
  /** Per event name, its newest events with their order across names. */
  events: Map<string, { seq: number; event: JobEvent }[]>;
}

/**
 * Every job started through the router, whatever its kind or target: one list
 * (jobs.list), one cancel (jobs.cancel), and jobs.started / jobs.ended for every
 * window. Each job keeps its newest events (bounded), so a window that reloads,
 * or one opened beside it, replays them and then follows the job live.
 */
export class JobRegistry {
  private readonly live = new Map<string, LiveJob>();
  private seq = 0;
  private readonly off: () => void;

  constructor(
    private readonly events: EventHub,
    private readonly newId: () => string,
    private readonly now: () => Date = () => new Date(),
    /** Throws when a job outside this registry holds the id (one started in-process: the CLI's, a wizard's own search). */
    private readonly refuseHeldElsewhere: (jobId: string) => void = () => undefined,
    /** The workspace: a failed job's message names its files relative to it, as the answer to its caller does. */
    private readonly root?: string,
  ) {
    this.off = events.subscribe((event, data) => this.record(event, data));
  }

  /**
   * Runs `work` as a job: its id is the request's `jobId` or a new one written into the request, so the
   * events the work emits carry the id the job is listed under. `work` opens its job with its service
   * before its first await; a cancel that comes before that (a window's, on hearing jobs.started) waits
   * for it, so it reaches the service instead of being lost.
   */
  async run<P extends object, T>(method: JobMethod, params: P, cancel: Cancel, work: (params: P) => Promise<T>): Promise<T> {
    const { kind } = JOB_METHODS[method];
    const target = jobTargetOf(method, params);
    const given = (params as { jobId?: unknown }).jobId;
    const jobId = typeof given === 'string' ? given : this.newId();
    this.refuseLive(jobId, method);
    const request = { ...params, jobId } as P;
    let handedOver!: () => void;
    const job: LiveJob = {
      info: { jobId, method, kind, target, request, startedAt: this.now().toISOString(), cancelling: false },
      cancel,
      taken: false,
      opened: new Promise<void>((resolve) => (handedOver = resolve)),
      events: new Map(),
    };
    this.live.set(jobId, job);
    this.events.emit('jobs.started', this.infoOf(job));
    let done: Promise<T>;
    try {
      done = work(request);
    } catch (err) {
      done = Promise.reject(err);
    }
    handedOver();
    const ended = { jobId, method, kind, target };
    try {
      const result = await done;
      this.live.delete(jobId);
      this.events.emit('jobs.ended', { ...ended, ok: true, result });
      return result;
    } catch (err) {
      this.live.delete(jobId);
      this.events.emit('jobs.ended', { ...ended, ok: false, error: toApiError(err).toPayload(this.root) });
      throw err;
    }
  }

  /**
   * Stops a running job by its id; false when no job of that id runs or its service did not take the cancel.
   * The job is shown `cancelling` while a cancel is under way and once one was taken, never after a cancel
   * that was not: every window's Cancel stays offered.
   */
  async cancel(jobId: string): Promise<{ cancelled: boolean }> {
    const job = this.live.get(jobId);
    if (!job) return { cancelled: false };
    job.info.cancelling = true;
    let taken = false;
    try {
      await job.opened;
      const answer = await job.cancel(jobId);
      taken = answer.cancelled;
      return answer;
    } finally {
      job.taken ||= taken;
      job.info.cancelling = job.taken;
    }
  }

  list(): JobInfo[] {
    return [...this.live.values()].map((job) => this.infoOf(job));
  }

  get running(): number {
    return this.live.size;
  }

  /** One id, one job, whatever the methods: a second job under a live id would run unlisted and uncancellable. */
  private refuseLive(jobId: string, method: JobMethod): void {
    const holder = this.live.get(jobId)?.info;
    if (holder) {
      const kind = KIND_WORDS[holder.kind];
      const what = holder.target === 'script' ? `a script ${kind}` : `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}`;
      // A resume names the job it goes on with: another id would be another job.
      const instead = method === 'optimise.resume' ? 'wait for it to end, or cancel it first' : 'choose another jobId';
      throw new ApiError('E_BAD_INPUT', `${what} with the id ${jobId} is already running: ${instead}`);
    }
    this.refuseHeldElsewhere(jobId);
  }

  dispose(): void {
    this.off();
  }

  private record(event: EventName, data: unknown): void {
    if (!isJobEventName(event)) return;
    const id = jobIdOfEvent(event, data as never);
    const job = id === null ? undefined : this.live.get(id);
    if (!job) return;
    let kept = job.events.get(event);
    if (!kept) job.events.set(event, (kept = []));
    kept.push({ seq: this.seq++, event: { event, data } });
    const cap = event === 'script.output' ? KEPT_OUTPUT_LINES : KEPT_PER_EVENT;
    // Trimmed in halves, so a long run costs amortised O(1) per event, never a shift per event.
    if (kept.length >= 2 * cap) kept.splice(0, kept.length - cap);
  }

  private infoOf(job: LiveJob): JobInfo {
    const cap = (name: string) => (name === 'script.output' ? KEPT_OUTPUT_LINES : KEPT_PER_EVENT);
    const events = [...job.events.entries()]
      .flatMap(([name, kept]) => kept.slice(-cap(name)))
      .sort((a, b) => a.seq - b.seq)
      .map((k) => k.event);
    return { ...job.info, events };
  }
}
