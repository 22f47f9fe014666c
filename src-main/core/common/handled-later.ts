/**
 * `p`, marked as handled: a promise kept to be awaited later (a telemetry window closed while its launch still
 * runs) must not end the process as an unhandled rejection meanwhile; whoever awaits it still sees the error.
 */
export function handledLater<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
