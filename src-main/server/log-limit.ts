/**
 * A log for lines a peer can cause as often as it likes (a reset per connection it opens): at most `max` in each
 * `windowMs`, then one line that says how many were left out. 800 refused upgrades a second wrote a line each
 * (re-attack 18), which buries what a person needs to read and costs the server a write each.
 */
export function limitedLog(log: (line: string) => void, what: string, max = 20, windowMs = 10_000): (line: string) => void {
  let since = 0;
  let shown = 0;
  let left = 0;
  let summary: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    summary = null;
    if (left > 0) log(`${left} more ${what} in ${windowMs / 1000} s were not logged`);
    left = 0;
  };
  return (line: string) => {
    const now = Date.now();
    if (now - since >= windowMs) {
      since = now;
      shown = 0;
    }
    if (shown < max) {
      shown++;
      log(line);
      return;
    }
    left++;
    // Said once the window is over, even when nothing more comes to trigger it.
    summary ??= setTimeout(flush, since + windowMs - now);
    summary.unref?.();
  };
}
