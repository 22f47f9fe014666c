// Issue 14: Ctrl-C on `trainbench find-batch-size -- <script>` cancels through the script job, as
// jobs.cancel does in the app: the trial in flight is killed with its process group (which
// the terminal's SIGINT does not reach: it runs in a group of its own) and the run is recorded cancelled,
// with the answer of the trials it finished.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, SCRIPTS } from './script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('Ctrl-C on trainbench find-batch-size -- <script>', () => {
  it('kills the running trial with its processes, exits with E_CANCELLED, prints and keeps the finished trial\'s answer', async () => {
    const mark = newMark();
    const child = spawn(
      process.execPath,
      [CLI, 'find-batch-size', '--start-batch', '16', '--steps', '3', '--warmup-steps', '1', '--workspace', ws.dir,
        '--env', `TB_TEST_MARK=${mark}`, '--env', 'OOM_AT=20', '--', PYTHON, path.join(SCRIPTS, 'oom_guard.py')],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Once the first trial is reported, the second one's python is the marked process to interrupt.
    const firstTrial = new Promise<void>((resolve) => {
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        if (stderr.includes('trial 1: batch 16 -> ok')) resolve();
      });
    });
    await firstTrial;
    while (processesWithMark(mark).length === 0) await sleep(10);
    child.kill('SIGINT');
    const code = await exited;
    expect(code, stderr).toBe(1);
    expect(stderr).toContain('cancelling the batch-size search');
    expect(stderr).toContain('trainbench: the batch-size search was cancelled during the trial at batch 32, after 1 finished trial(s)');
    // The finished trial's answer is printed, labelled, before the cancel's error, and kept in the cancelled run.
    expect(stdout).toMatch(/^verdict {2}cancelled after 1 trial; from it alone: batch 16 is the largest that fits; fastest: 16$/m);
    expect(stdout).toMatch(/^saved {4}runs\/[\w-]+ \(1 trial in [\d.]+ s, cancelled\)$/m);
    expect(processesWithMark(mark)).toEqual([]);
    const [id] = readdirSync(path.join(ws.dir, 'runs'));
    const record = JSON.parse(readFileSync(path.join(ws.dir, 'runs', id, 'run.json'), 'utf8')) as { kind: string; status: string; error: { code: string } };
    expect(record).toMatchObject({
      kind: 'batch-search',
      status: 'cancelled',
      error: { code: 'E_CANCELLED' },
      result: { cancelledAfterTrials: 1, largestFitting: 16, recommended: 16, trials: [{ batchSize: 16, outcome: 'ok' }] },
    });
    // And written up, labelled: a report on the cancelled search carries its answer (it was left out as "no results").
    const report = spawnSync(process.execPath, [CLI, 'report', id, '--json', '--workspace', ws.dir], { encoding: 'utf8' });
    expect(report.status, report.stderr).toBe(0);
    const { markdown } = JSON.parse(report.stdout) as { markdown: string };
    expect(markdown).toContain('cancelled after 1 trial; from it alone: batch 16 is the largest that fits; fastest: 16');
    expect(markdown).not.toMatch(/no results to report/);
  }, 120_000);
});
