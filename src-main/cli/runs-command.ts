import { Command } from 'commander';

import { withoutCodes } from '../api/error-words';
import type { RunSummary } from '../api/training';
import { printable } from '../api/shell-word';
import { lastStepText, wizardProgressText } from '../api/training';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { jsonText, textOut } from './json-out';

const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
const count = (x: number) => Math.round(x).toLocaleString('en-US');

/** What is worth a glance after the status: how far an unfinished run got, the result, or what went wrong. */
function detail(r: RunSummary): string {
  // An optimisation has no training steps of its own: how far its wizard got, from its saved state.
  // A batch-size search trains in trials and records no steps of its own.
  const step = r.kind === 'optimise' ? wizardProgressText(r.wizard) : r.kind === 'batch-search' ? '' : lastStepText(r.lastStep);
  switch (r.status) {
    case 'interrupted':
      return step ? `${step}: ${r.interruption}` : (r.interruption ?? '');
    case 'running':
      return step;
    case 'unreadable':
      return r.problem ?? '';
    case 'failed':
    case 'cancelled':
      // In words, as the Runs page says it: "out of memory: …", not the stored "E_OOM: …".
      return r.error === null ? '' : withoutCodes(r.error);
    case 'completed':
      return [
        r.testAccuracy === null ? null : `test accuracy ${pct(r.testAccuracy)}`,
        r.samplesPerSec === null ? null : `${count(r.samplesPerSec)} samples/s`,
        r.gpuUtilizationMean === null ? null : `GPU ${r.gpuUtilizationMean.toFixed(0)}%`,
      ]
        .filter((part) => part !== null)
        .join(', ');
  }
}

/** The run as a person named it ("baseline (mlp on …) [fast, amp]"), else its title. */
function named(r: RunSummary): string {
  const name = r.annotation?.name ? `${r.annotation.name} (${r.title})` : r.title;
  return r.annotation?.tags.length ? `${name} [${r.annotation.tags.join(', ')}]` : name;
}

/** One line per run: id, status, name or title with its tags, detail. */
export function formatRuns(runs: RunSummary[]): string {
  if (runs.length === 0) return 'no runs in this workspace yet (trainbench train records one)';
  const width = (pick: (r: RunSummary) => string) => Math.max(...runs.map((r) => pick(r).length));
  const idWidth = width((r) => r.id);
  const statusWidth = width((r) => r.status);
  return runs
    // Titles, names, tags and messages come from the runs' files: one line each, control characters escaped.
    .map((r) => `${r.id.padEnd(idWidth)}  ${r.status.padEnd(statusWidth)}  ${printable(named(r))}${detail(r) ? `  ${printable(detail(r))}` : ''}`)
    .join('\n');
}

/** `trainbench runs`: the Runs list of the workspace, as text or JSON (the runs.list answer). */
export function runsCommand(out: NodeJS.WritableStream = process.stdout): Command {
  return new Command('runs')
    .description('list the runs of the workspace, newest first; a run whose process is gone shows as interrupted, with its last step')
    .option('--json', 'print the list as JSON (the runs.list answer)')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(async (opts: { json?: boolean; workspace: string }) => {
      const services = await createServices({ workspaceDir: opts.workspace });
      try {
        const runs = (await services.router.dispatch('runs.list', {})) as RunSummary[];
        out.write((opts.json ? jsonText(runs, 2) : textOut(formatRuns(runs))) + '\n');
      } finally {
        await services.dispose();
      }
    });
}
