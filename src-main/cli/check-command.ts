import { statSync } from 'node:fs';
import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import type { CheckResult } from '../api/check';
import { createServices } from '../core/services';
import { median } from '../core/stats/medians';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { type ConfounderPolicy, ConfounderPolicySchema } from '../api/optimise';
import { printable } from '../api/shell-word';
import { choiceArg, intArg } from './train-inputs';
import { errorOut } from './error-out';
import { jsonText, textOut } from './json-out';

interface CheckFlags {
  against: string;
  tolerance: number;
  repeat?: number;
  yes?: string | boolean;
  confounders: ConfounderPolicy;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

/** "5%", "5" or "0.05" as 0.05: a relative tolerance above 0 and below 100%. */
export function toleranceArg(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$/.exec(value);
  const n = m ? Number(m[1]) / (m[2] || Number(m[1]) >= 1 ? 100 : 1) : NaN;
  if (!(n > 0 && n < 1)) throw new InvalidArgumentError(`--tolerance takes a percentage above 0 and below 100 (5%, 5 or 0.05), got ${JSON.stringify(value)}`);
  return n;
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');

export function formatCheck(r: CheckResult): string {
  const side = (x: CheckResult['now']) => `${x.samplesPerSec.length} repetition(s), median ${x.samplesPerSec.length ? n0(median(x.samplesPerSec)) : 'none'} samples/s (${x.samplesPerSec.map(n0).join(', ')})`;
  return [
    // Titles come from run files: shown with their control characters escaped.
    `check      ${printable(r.against.title)}`,
    `saved      run ${r.against.runId} (${printable(r.against.createdAt)}): ${side(r.against)}`,
    `now        run ${r.now.runId}: ${side(r.now)}`,
    `conditions ${r.differences.length ? printable(r.differences.join('; ')) : 'same host, CPU and device as the saved run'}`,
    ...(r.confounders ? [printable(`confounders saved run: ${r.confounders.against.join('; ') || 'none seen'}; this run: ${r.confounders.now.join('; ') || 'none seen'}`)] : []),
    // It names the conditions that differ: the saved run's hostname and CPU, from its file.
    `verdict    ${printable(r.verdict.text)}`,
    `exit       ${r.verdict.exitCode} (0 faster or the same, 1 slower, 2 could not decide)`,
  ].join('\n');
}

/**
 * `--against` as a shell gives a report's path: a file there, relative to the current folder (or absolute), inside
 * the workspace, is passed as its path in the workspace, where the service reads it; anything else (a run id, a path
 * meant in the workspace) as typed. A relative path was read in the workspace only, so one typed from another
 * folder was "not there".
 */
export function againstInWorkspace(against: string, workspaceDir: string, cwd = process.cwd()): string {
  const file = path.resolve(cwd, against);
  const inside = path.relative(path.resolve(workspaceDir), file);
  if (!inside || inside.startsWith('..') || path.isAbsolute(inside)) return against;
  const isFile = (() => {
    try {
      return statSync(file).isFile();
    } catch {
      return false;
    }
  })();
  return isFile ? inside.split(path.sep).join('/') : against;
}

async function check(flags: CheckFlags): Promise<void> {
  const services = await createServices({ workspaceDir: flags.workspace });
  try {
    const result = await services.check.run(againstInWorkspace(flags.against, flags.workspace), {
      tolerance: flags.tolerance,
      repeat: flags.repeat,
      commandConsent: flags.yes,
      confounders: flags.confounders,
      onProgress: (p) => {
        if (flags.progress && !flags.json && p.phase === 'repetition-done') process.stderr.write(`repetition ${p.repetition} of ${p.repetitions}: ${n0(p.samplesPerSec ?? 0)} samples/s\n`);
      },
    });
    process.stdout.write((flags.json ? jsonText(result, 2) : textOut(formatCheck(result))) + '\n');
    process.exitCode = result.verdict.exitCode;
  } catch (err) {
    // A gate that could not measure could not decide: 2, never 1 (which says "slower"). The message may quote the
    // saved run's command, cwd and env for the person to read before --yes: escaped, so a planted ESC or CR
    // cannot redraw it as another command.
    errorOut(err, { json: flags.json === true });
    process.exitCode = 2;
  } finally {
    await services.dispose();
  }
}

export function checkCommand(): Command {
  return new Command('check')
    .description(
      'the regression gate: measure a saved benchmark run again, as it was measured, and say whether it is faster, the same within the tolerance, or slower (exit 0 / 0 / 1; 2 when it cannot decide)',
    )
    .requiredOption('--against <run-id|report>', 'the benchmark run to compare with, or a report in the workspace that names one (its path from here, or in the workspace)')
    .option('--tolerance <pct>', 'the change to tolerate, e.g. 5%', toleranceArg, 0.05)
    .option('--repeat <n>', "repetitions of the new measurement (default: the saved run's)", intArg('--repeat', 2))
    .option('--yes [fingerprint]', "run the saved run's own command again, as the fingerprint shown beside it (a script target; the command comes from the run's file)")
    .option(
      '--confounders <policy>',
      "remeasure: when other load or a GPU slowdown crowded one run and not the other, the gate cannot decide (exit 2: measure again); record: list them and decide anyway (a shared CI machine)",
      choiceArg('--confounders', ConfounderPolicySchema.options),
      'remeasure',
    )
    .option('--json', 'print the result as JSON (for CI systems)')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(check);
}
