import type { EventName } from '../../api/events';
import type { JobEvent, JobInfo, JobMethod } from '../../api/jobs';
import { JOB_METHODS, isJobEventName, jobIdOfEvent, jobTargetOf } from '../../api/jobs';
import { toApiError } from '../../api/errors';
import type { EventHub } from '../common/event-hub';

/** How many events of one name a job keeps for windows that attach later: enough to redraw a run's curves. */
const KEPT_PER_EVENT = 1000;
/** Output lines are many and only the last screenful matters to a window that attaches. */
const KEPT_OUTPUT_LINES = 300;

type Cancel = (jobId: string) => Promise<{ cancelled: boolean }> | { cancelled: boolean };

interface LiveJob {
  info: Omit<JobInfo, 'events'>;
  cancel: Cancel;
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
  ) {
    this.off = events.subscribe((event, data) => this.record(event, data));
  }

  /**
   * Runs `work` as a job: its id is the request's `jobId` or a new one written into the request, so the
   * events the work emits carry the id the job is listed under.
   */
  async run<P extends object, T>(method: JobMethod, params: P, cancel: Cancel, work: (params: P) => Promise<T>): Promise<T> {
    const { kind } = JOB_METHODS[method];
    const target = jobTargetOf(method, params);
    const given = (params as { jobId?: unknown }).jobId;
    const jobId = typeof given === 'string' ? given : this.newId();
    const request = { ...params, jobId } as P;
    // Each service refuses an id it runs already, in its own words; the first job stays the one listed.
    if (this.live.has(jobId)) return work(request);
    const job: LiveJob = {
      info: { jobId, method, kind, target, request, startedAt: this.now().toISOString(), cancelling: false },
      cancel,
      events: new Map(),
    };
    this.live.set(jobId, job);
    this.events.emit('jobs.started', this.infoOf(job));
    const ended = { jobId, method, kind, target };
    try {
      const result = await work(request);
      this.live.delete(jobId);
      this.events.emit('jobs.ended', { ...ended, ok: true, result });
      return result;
    } catch (err) {
      this.live.delete(jobId);
      this.events.emit('jobs.ended', { ...ended, ok: false, error: toApiError(err).toPayload() });
      throw err;
    }
  }

  /** Stops a running job by its id; false when no job of that id runs. */
  async cancel(jobId: string): Promise<{ cancelled: boolean }> {
    const job = this.live.get(jobId);
    if (!job) return { cancelled: false };
    job.info.cancelling = true;
    return job.cancel(jobId);
  }

  list(): JobInfo[] {
    return [...this.live.values()].map((job) => this.infoOf(job));
  }

  get running(): number {
    return this.live.size;
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
