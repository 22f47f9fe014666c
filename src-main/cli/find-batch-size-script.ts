import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ScriptBatchSearchResult, ScriptOverrides } from '../api/script-target';
import { ScriptBatchSearchRequestSchema } from '../api/script-target';
import { openWorkspace } from '../core/workspace';
import { searchScriptBatch } from '../core/script/script-batch-size';
import { ScriptJobs } from '../core/script/script-jobs';
import { scriptTarget } from './benchmark-script-command';

export interface ScriptSearchFlags {
  set?: ScriptOverrides;
  cwd?: string;
  env?: Record<string, string>;
  startBatch?: number;
  maxBatch?: number;
  headroom: number;
  warmupSteps?: number;
  steps: number;
  timeout?: number;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');

export function formatScriptSearch(r: ScriptBatchSearchResult): string {
  const rows = r.trials.map((t) => `${n(t.batchSize).padStart(9)}  ${t.outcome.padEnd(6)} ${(t.samplesPerSec === null ? '-' : n(t.samplesPerSec)).padStart(10)} ${(t.cudaPeakBytes === null ? '-' : (t.cudaPeakBytes / 2 ** 20).toFixed(1)).padStart(13)} ${t.seconds.toFixed(1).padStart(7)}`);
  return [
    `command  ${r.title}`,
    `device   ${r.device}${r.cudaTotalBytes ? `: ${(r.cudaTotalBytes / 2 ** 20).toFixed(0)} MiB, ${Math.round(r.headroom * 100)}% kept free` : ' (a batch fits when it trains)'}`,
    '    batch  result  samples/s  CUDA peak MiB  time s',
    ...rows,
    `largest  ${r.largestFitting === null ? 'none' : n(r.largestFitting)}; recommended ${r.recommended === null ? 'none' : n(r.recommended)}`,
    `verdict  ${r.verdict}`,
    `saved    ${r.runDir} (${r.trials.length} trials in ${r.seconds.toFixed(1)} s)`,
  ].join('\n');
}

/** `trainbench find-batch-size [options] -- command...`: the search on a script target. */
export async function findBatchSizeScript(command: string[], flags: ScriptSearchFlags): Promise<void> {
  const parsed = ScriptBatchSearchRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    startBatch: flags.startBatch,
    maxBatch: flags.maxBatch,
    headroom: flags.headroom,
    warmupSteps: flags.warmupSteps,
    stepsPerTrial: flags.steps,
    timeoutSeconds: flags.timeout,
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad option: ${formatIssues(parsed.error, 'search')}`);
  const workspace = await openWorkspace(flags.workspace);
  // Ctrl-C takes the path script.cancel takes in the app: the job kills the trial's process group and the run is recorded cancelled.
  const jobs = new ScriptJobs();
  const job = `find-batch-size-${process.pid}`;
  const onSigint = () => {
    process.stderr.write('\ncancelling the batch-size search...\n');
    jobs.cancel(job);
  };
  process.on('SIGINT', onSigint);
  try {
    const result = await searchScriptBatch(workspace, { ...parsed.data, jobId: job }, {
      jobs,
      onTrial: (t) => {
        if (flags.progress && !flags.json) process.stderr.write(`trial ${t.index + 1}: batch ${n(t.batchSize)} -> ${t.outcome}${t.samplesPerSec === null ? '' : `, ${n(t.samplesPerSec)} samples/s`}\n`);
      },
    });
    process.stdout.write((flags.json ? JSON.stringify(result, null, 2) : formatScriptSearch(result)) + '\n');
  } finally {
    process.off('SIGINT', onSigint);
  }
}
