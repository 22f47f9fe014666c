import { Command, InvalidArgumentError } from 'commander';

import type { LoaderBenchResult, LoaderBenchRow } from '../api/datasets';
import { LoaderBenchRequestSchema } from '../api/datasets';
import { formatIssues } from '../api/format-issues';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

function intList(value: string): number[] {
  const list = value.split(',').map(Number);
  if (list.some((n) => !Number.isInteger(n) || n < 0)) throw new InvalidArgumentError(`expected integers such as 0,1,2,4, got ${JSON.stringify(value)}`);
  return list;
}

export function formatBench(r: LoaderBenchResult): string {
  const row = (kind: string, x: LoaderBenchRow) => {
    const best = kind === 'cached' && x.workers === r.best.workers && x.prefetch === r.best.prefetch ? ' *' : '';
    return `${kind.padEnd(9)} ${String(x.workers).padStart(7)} ${String(x.prefetch).padStart(8)} ${Math.round(x.samplesPerSec).toLocaleString('en-US').padStart(11)} ${x.mbPerSec.toFixed(1).padStart(9)} ${x.latencyP50Ms.toFixed(2).padStart(8)} ${x.latencyP95Ms.toFixed(2).padStart(8)} ${(100 * x.waitedFraction).toFixed(0).padStart(8)}%${best}`;
  };
  const lines = [
    `dataset ${r.dataset}, batch ${r.batchSize}`,
    'path      workers prefetch   samples/s      MB/s   p50 ms   p95 ms  blocked',
    ...r.cached.map((x) => row('cached', x)),
    ...(r.uncached ?? []).map((x) => row('uncached', x)),
    `* best cached setting; "blocked" is the share of time the consumer waited for data${r.uncached ? '' : `\nuncached: not measured (${r.uncachedReason})`}`,
  ];
  if (r.uncached) {
    const bestUncached = Math.max(...r.uncached.map((x) => x.samplesPerSec));
    const bestCached = Math.max(...r.cached.map((x) => x.samplesPerSec));
    lines.push(`cached / uncached at the best settings: ${(bestCached / bestUncached).toFixed(2)}x`);
  }
  return lines.join('\n');
}

export function loaderBenchCommand(): Command {
  return new Command('benchmark-dataloader')
    .description('sweep loader settings on a cached dataset (and on its source read in place)')
    .requiredOption('--dataset <id|name>', 'a cached dataset')
    .option('--batch-size <n>', 'records per batch', (v) => Number(v), 256)
    .option('--workers <list>', 'worker counts to try', intList, [0, 1, 2])
    .option('--prefetch <list>', 'prefetch depths to try', intList, [2])
    .option('--sample-ratio <r>', 'fraction of records drawn per epoch', (v) => Number(v), 1)
    .option('--seconds <s>', 'time per setting', (v) => Number(v), 2)
    .option('--no-uncached', 'skip reading the source in place')
    .option('--device <name>', 'cpu, or cuda:N to copy every batch to that GPU through the prefetch ring', 'cpu')
    .option('--gpu-prefetch <n>', 'depth of the GPU prefetch ring', (v) => Number(v), 3)
    .option('--json', 'print JSON')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(async (o) => {
      const parsed = LoaderBenchRequestSchema.safeParse({
        dataset: o.dataset,
        batchSize: o.batchSize,
        workers: o.workers,
        prefetch: o.prefetch.map((p: number) => Math.max(1, p)),
        sampleRatio: o.sampleRatio,
        maxSeconds: o.seconds,
        uncached: o.uncached,
        device: o.device,
        gpuPrefetch: o.gpuPrefetch,
      });
      if (!parsed.success) throw new UsageError(formatIssues(parsed.error, 'options'));
      const services = await createServices({ workspaceDir: o.workspace });
      try {
        const r = await services.datasets.benchmark(parsed.data, { allowPathsOutsideWorkspace: true });
        process.stdout.write((o.json ? jsonText(r, 2) : textOut(formatBench(r))) + '\n');
      } finally {
        await services.dispose();
      }
    });
}
