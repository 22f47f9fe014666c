import type { MethodName } from '../api/methods';
import type { FairSlots } from '../core/common/fair-slots';

/**
 * Methods whose answer, asked with no params, is the same for every caller: a walk of one folder of the workspace.
 * 31 connections of one token keeping 32 runs.list each in flight made another window's four page lists take 13.6 s,
 * each walk in its turn (re-attack 19); now every caller that asks while a walk waits for its slot shares that walk.
 */
export const SHARED_READ_METHODS: ReadonlySet<MethodName> = new Set<MethodName>(['runs.list', 'datasets.list', 'reports.list', 'models.list']);

/** Params that ask for nothing in particular: absent, or an empty plain object. */
export function asksNothing(params: unknown): boolean {
  if (params === undefined) return true;
  return typeof params === 'object' && params !== null && !Array.isArray(params) && Object.keys(params).length === 0;
}

/**
 * One read per method waiting for its slot, shared by everyone who asks before it starts, and made JSON once for all
 * of them. A caller never joins a read that has started: what it gets was read after it asked (a run created just
 * before is in it).
 */
export class SharedReads {
  private readonly waiting = new Map<MethodName, Promise<string>>();
  /** Each method's reads take their turn in the slots as one caller of their own, whichever connection went. */
  private readonly owners = new Map<MethodName, object>();

  constructor(
    private readonly slots: FairSlots,
    private readonly read: (method: MethodName) => Promise<unknown>,
  ) {}

  /** The answer's result as JSON. */
  get(method: MethodName): Promise<string> {
    const queued = this.waiting.get(method);
    if (queued) return queued;
    let owner = this.owners.get(method);
    if (!owner) this.owners.set(method, (owner = {}));
    const started = this.slots.run(owner, async () => {
      this.waiting.delete(method);
      return JSON.stringify(await this.read(method));
    });
    this.waiting.set(method, started);
    return started;
  }
}
