import type { ProcessMemory } from './training';

/** The engine process's peak beside the accounting: the rest is the runtime and the dataset's mapped pages. */
export function processMemoryText(m: ProcessMemory): string {
  const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
  const files = m.fileRssBytes === null ? '' : ` (${mb(m.fileRssBytes)} of it file pages at the end: the dataset's memory-mapped cache and the addon, shared with the page cache)`;
  return `engine process peak ${mb(m.peakRssBytes)} resident ${m.scope === 'run' ? 'during the run' : 'over its life'}${files}`;
}
