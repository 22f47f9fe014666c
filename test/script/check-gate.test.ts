// `trainbench check` (issue 26 item 5) on a loader-bound script: slow_items.py waits about 1 ms per item, so with no
// DataLoader worker a step waits for every item in turn (sleeps: steady however busy the machine is), and four
// workers overlap those waits. A benchmark saved with no worker, checked again as it is: "same" (exit 0). One saved
// with four workers, checked against the target with its workers taken away (the run's own settings made slower,
// as a regression would): "slower" (exit 1). A command from a run file runs only with --yes; a run that is not a
// benchmark, or none, cannot be decided (exit 2).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CheckResult } from '../../src-main/api/check';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

/** What a person does: reads the command check shows, then passes the fingerprint printed beside it. */
async function consentFor(id: string): Promise<string> {
  const shown = await runCli(['check', '--against', id, '--workspace', ws.dir]);
  const fingerprint = /pass --yes ([0-9a-f]{32}) to run exactly this/.exec(shown.stderr)?.[1];
  if (!fingerprint) throw new Error(`check showed no fingerprint for ${id}: ${shown.stderr}`);
  return fingerprint;
}

const SMALL = ['--repeat', '3', '--steps', '12', '--warmup-steps', '3', '--workspace', ws.dir];
/** Saved with no worker (the same target checked again), and with four (then checked with none). */
let saved = '';
let withWorkers = '';

async function savedBenchmark(workers: number): Promise<string> {
  const r = await runCli(['benchmark-training', '--json', ...SMALL, '--set', `dataloader.num_workers=${workers}`, '--', PYTHON, `${SCRIPTS}/slow_items.py`]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { runId: string }).runId;
}

describe('trainbench check: the regression gate on a loader-bound script', () => {
  beforeAll(async () => {
    saved = await savedBenchmark(0);
    withWorkers = await savedBenchmark(4);
  }, 240_000);

  it('runs a saved command again only with --yes, naming it', async () => {
    const r = await runCli(['check', '--against', saved, '--workspace', ws.dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`run ${saved} measured a command, which check would run again: the run's file names the settings {`);
    // The command last, beside the fingerprint that runs it.
    expect(r.stderr).toMatch(new RegExp(`and the command ${PYTHON} ${SCRIPTS}/slow_items\\.py\\.\\n  It runs ${PYTHON} ${SCRIPTS}/slow_items\\.py in [^;\\n]+; pass --yes [0-9a-f]{32} to run exactly this`));
  });

  it('takes a report in the workspace that names one benchmark run, and refuses one naming none', async () => {
    writeFileSync(path.join(ws.dir, 'adr.md'), `# ADR\n\nMeasured in run ${saved} (and trained in 20260101-000000-abcdef).\n`);
    const r = await runCli(['check', '--against', 'adr.md', '--workspace', ws.dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`run ${saved} measured a command, which check would run again`);
    writeFileSync(path.join(ws.dir, 'none.md'), '# nothing measured here\n');
    const none = await runCli(['check', '--against', 'none.md', '--workspace', ws.dir]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('report none.md names no completed benchmark run of this workspace');
  });

  it('the target as it was: the same within a 15% tolerance, exit 0', async () => {
    // Beside the other test files' load, what crowded each run differs from run to run: listed, not decisive here.
    const r = await runCli(['check', '--against', saved, '--yes', await consentFor(saved), '--tolerance', '15%', '--confounders', 'record', '--json', '--workspace', ws.dir]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const result = JSON.parse(r.stdout) as CheckResult;
    expect(result.against.runId).toBe(saved);
    expect(result.now.samplesPerSec).toHaveLength(3);
    expect(result.differences).toEqual([]);
    expect(['same', 'faster']).toContain(result.verdict.outcome);
    // Both runs recorded their conditions: the confounders seen are listed for each.
    expect(result.confounders).toEqual({ against: expect.any(Array), now: expect.any(Array) });
  }, 240_000);

  it('the target with fewer loader workers than it was saved with: slower, exit 1', async () => {
    const file = path.join(ws.dir, 'runs', withWorkers, 'run.json');
    const record = JSON.parse(readFileSync(file, 'utf8')) as { config: { overrides: Record<string, number> } };
    record.config.overrides['dataloader.num_workers'] = 0;
    writeFileSync(file, JSON.stringify(record));
    const r = await runCli(['check', '--against', withWorkers, '--yes', await consentFor(withWorkers), '--tolerance', '15%', '--confounders', 'record', '--workspace', ws.dir]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(1);
    expect(r.stdout).toMatch(/^verdict {4}slower by \d+\.\d%: -\d+\.\d% \(90\.0% CI -\d+\.\d% to -\d+\.\d%\), the whole interval beyond the tolerance of ±15\.0%$/m); // 3 + 3 launches: the widest interval covers 90%, said so
    expect(r.stdout).toContain('exit       1 (0 faster or the same, 1 slower, 2 could not decide)');
  }, 240_000);

  it('cannot decide about a run that is not a benchmark, or no run at all: exit 2 with why', async () => {
    const missing = await runCli(['check', '--against', '20260101-000000-abcdef', '--workspace', ws.dir]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^trainbench: --against "20260101-000000-abcdef" is neither a run id \(yyyymmdd-hhmmss-xxxxxx\) nor a report in the workspace/);
    const bad = await runCli(['check', '--against', saved, '--tolerance', '150%', '--workspace', ws.dir]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--tolerance takes a percentage above 0 and below 100 (5%, 5 or 0.05), got "150%"');
  });
});
