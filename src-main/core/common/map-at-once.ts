/**
 * Reads a list makes of each of its items (a run, a report, a dataset, a model file) at once. One after another,
 * each item's few small reads waited a turn of the event loop apiece, and behind other windows' parsing of a
 * run's events a list of 263 runs took 5-14 s (re-attack 21), of a few datasets and models 5-8 s (re-attack 22).
 */
export const LIST_READS_AT_ONCE = 8;

/**
 * `fn` of every item, in the items' order, at most `atOnce()` running at a time (asked again before each item, so
 * a caller can narrow it as a budget runs down). The first failure is thrown once what runs has settled; no item
 * starts after it.
 */
export async function mapAtOnce<T, R>(items: readonly T[], atOnce: () => number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  const running = new Set<Promise<void>>();
  let failed: { err: unknown } | null = null;
  for (let i = 0; i < items.length && !failed; i++) {
    while (running.size >= Math.max(1, atOnce())) await Promise.race(running);
    if (failed) break;
    const at = i;
    const one: Promise<void> = fn(items[at], at).then(
      (r) => void (out[at] = r),
      (err: unknown) => void (failed ??= { err }),
    );
    running.add(one);
    void one.finally(() => running.delete(one));
  }
  await Promise.all(running);
  if (failed) throw (failed as { err: unknown }).err;
  return out;
}
