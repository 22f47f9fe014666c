/**
 * The wall clock in ms with sub-millisecond resolution, on the same clock as `Date.now()` and Python's `time.time()`.
 *
 * `performance.timeOrigin + performance.now()` is not that clock: it is a monotonic clock from an origin read once at
 * start-up, up to 2 ms off the wall clock here, and it does not follow the wall clock when that is stepped. In CI two
 * ranks on the collector's own machine read offsets of 40-58 ms against it, which hid a straggler's lateness.
 */

/** Beyond this the anchor is taken again: the wall clock was stepped (NTP, a person) since it was taken. */
const DRIFT_MS = 0.5;

/** An anchor whose error bound is this wide, or wider, may straddle a preemption or a compile: it is not trusted. */
const CLOSE_MS = 0.02;

/**
 * `Date.now()` minus `performance.now()` at the instant `Date.now()` ticks, so the ms it floors away is not lost;
 * with its error bound. Each `Date.now()` is bracketed by two fine reads, so the tick lies between the fine read before
 * the last unticked wall read and the one after the ticked read: a pause anywhere in there (before or after the ticked
 * read) widens the bound instead of moving the estimate unseen.
 */
function tickAnchor(): { at: number; errorMs: number } {
  let lastBefore = performance.now();
  let lastWall = Date.now();
  for (;;) {
    const before = performance.now();
    const wall = Date.now();
    const after = performance.now();
    if (wall !== lastWall) return { at: wall - (lastBefore + after) / 2, errorMs: (after - lastBefore) / 2 };
    lastBefore = before;
    lastWall = wall;
  }
}

/** The median of 3 close anchors (20 tries at most, ~20 ms; then the closest found): a busy machine preempts some. */
function anchor(): number {
  const tried: { at: number; errorMs: number }[] = [];
  for (let i = 0; i < 20 && tried.filter((a) => a.errorMs < CLOSE_MS).length < 3; i++) tried.push(tickAnchor());
  const close = tried.filter((a) => a.errorMs < CLOSE_MS).map((a) => a.at);
  if (close.length === 0) return tried.reduce((a, b) => (b.errorMs < a.errorMs ? b : a)).at;
  close.sort((a, b) => a - b);
  return close[Math.floor(close.length / 2)];
}

/** A wall clock: each call is `Date.now()` to within a few µs, with the fraction of a ms kept. Anchored at its first call. */
export function wallClock(): () => number {
  let at: number | null = null;
  return () => {
    at ??= anchor();
    let t = at + performance.now();
    const wall = Date.now();
    if (t < wall - DRIFT_MS || t > wall + 1 + DRIFT_MS) {
      at = anchor();
      t = at + performance.now();
    }
    return t;
  };
}
