// The batches a search could not train (out of memory, or killed), as marks on the batch axis:
// shared by the engine's and the script's batch-size charts.

export const FAILED_BATCH = { E_OOM: { name: 'out of memory', color: '#f85149' }, crash: { name: 'killed', color: '#d29922' } } as const;

/** One series per kind of failure that occurred; a failed batch has no throughput, so it sits at 0, where the curve ends. */
export function failedBatchSeries(trials: readonly { batchSize: number; outcome: string }[]): Record<string, unknown>[] {
  return (['E_OOM', 'crash'] as const)
    .map((outcome) => ({
      name: FAILED_BATCH[outcome].name,
      type: 'scatter',
      symbol: 'triangle',
      symbolSize: 12,
      itemStyle: { color: FAILED_BATCH[outcome].color },
      data: trials.filter((t) => t.outcome === outcome).map((t) => [t.batchSize, 0]),
    }))
    .filter((s) => s.data.length > 0);
}

/** "out of memory at batch 512, 1024": the failures for a chart's text alternative. */
export function failedBatchText(trials: readonly { batchSize: number; outcome: string }[]): string[] {
  return (['E_OOM', 'crash'] as const).flatMap((o) => {
    const batches = trials.filter((t) => t.outcome === o).map((t) => t.batchSize).sort((a, b) => a - b);
    return batches.length ? [`${FAILED_BATCH[o].name} at batch ${batches.join(', ')}`] : [];
  });
}
