import type { JobEvent } from '@api/jobs';

/**
 * The live events a window heard while it read the job's replay, less those the replay already holds: per event
 * name, the replay's newest events and the queue's oldest overlap when both saw them (the list was read after
 * listening began), so the longest such overlap is dropped. Without it a window that attaches would draw steps
 * twice or, worse, skip those between a stale replay and its first live event.
 */
export function unseenEvents(queued: readonly JobEvent[], replay: readonly JobEvent[]): JobEvent[] {
  const dropped = new Set<number>();
  for (const name of new Set(queued.map((e) => e.event))) {
    const heard = queued.flatMap((e, i) => (e.event === name ? [{ i, text: canonical(e.data) }] : []));
    const held = replay.filter((e) => e.event === name).slice(-heard.length).map((e) => canonical(e.data));
    for (let k = Math.min(heard.length, held.length); k > 0; k--) {
      const tail = held.slice(held.length - k);
      if (heard.slice(0, k).every((h, j) => h.text === tail[j])) {
        for (const h of heard.slice(0, k)) dropped.add(h.i);
        break;
      }
    }
  }
  return queued.filter((_, i) => !dropped.has(i));
}

/** JSON with each object's keys in order: the same event read from a list and heard live compares equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
