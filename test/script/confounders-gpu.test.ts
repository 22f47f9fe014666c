// Issue 26 item 1: a GPU that slows down during one side of every A/B pair makes the script wizard
// measure the pair again, twice, then leave the trial undecided ("confounded"), in the CLI's JSON and
// in the report's Conditions table. The GPU is nvidia-smi replaying a recorded H100 (the telemetry
// tests' fake) whose slowdown mask the test sets while the chosen launches run.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { scriptWizard } from '../helpers/target-detail';
import { fakeNvidiaSmi } from '../helpers/fake-nvidia-smi';
import { followLaunches } from '../helpers/launch-signals';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
const signals = tempDir('tb-signals-');
const smi = fakeNvidiaSmi('one-gpu.txt');
beforeAll(requireBuilt);
afterAll(() => {
  ws.cleanup();
  signals.cleanup();
  smi.cleanup();
});

describe('the script wizard under a GPU that slows down during one side of each pair', () => {
  it('measures the pair again twice, then marks the trial confounded and names the slowdown; the report has a Conditions table', async () => {
    // Baseline: launches 1-2. Trial 1 (2 pairs): best 3, candidate 4; again 5/6; again 7/8; pair 2: 9/10.
    // Every candidate launch of the trial runs on a GPU held down for heat (hw_thermal_slowdown, 0x40).
    const throttle = path.join(signals.dir, 'throttle');
    const candidates = [4, 6, 8, 10];
    const follow = followLaunches(signals.dir, candidates, () => writeFileSync(throttle, '0x0000000000000040'), () => rmSync(throttle, { force: true }));
    const env = { ...process.env, TRAINBENCH_NVIDIA_SMI: smi.command, FAKE_NVIDIA_SMI_THROTTLE_FILE: throttle };
    const { code, stdout, stderr } = await runCli(
      [
        'optimise', '--json', '--report', '--repeat', '2', '--steps', '30', '--warmup-steps', '3', '--max-trials', '1', '--only', 'dataloader.num_workers',
        '--workspace', ws.dir,
        '--env', `TB_LAUNCH_COUNTER=${path.join(signals.dir, 'count')}`, '--env', `TB_SIGNAL_DIR=${signals.dir}`, '--env', `TB_SIGNAL_LAUNCHES=${candidates.join(',')}`,
        '--', PYTHON, path.join(SCRIPTS, 'signal_launches.py'),
      ],
      400_000,
      env,
    ).finally(() => follow.close());
    expect(code, stderr).toBe(0);
    const r = scriptWizard(JSON.parse(stdout));
    const [trial] = r.trials;
    expect(trial.decision).toBe('confounded');
    expect(trial.kept).toBe(false);
    expect(trial.why).toMatch(/^confounded: pair 1: .*the GPU was slowed by the hardware for heat in \d+% of the best's samples and \d+% of the candidate's.* \(measured again 2 times\); not decided/);
    const rows = trial.conditions!;
    expect(rows).toHaveLength(8); // two pairs, and pair 1 twice more
    expect(rows.filter((x) => x.remeasured !== null).map((x) => `${x.pair} ${x.side}`)).toEqual(['1 best', '1 candidate', '1 best', '1 candidate']);
    for (const x of rows) {
      const slowed = x.conditions!.gpuSlowdown.hw_thermal_slowdown ?? 0;
      if (x.side === 'candidate') expect(slowed).toBeGreaterThanOrEqual(0.5);
      else expect(slowed).toBeLessThan(0.1);
    }
    expect(r.final.changes).toEqual([]);

    const reports = path.join(ws.dir, 'reports');
    const [dir] = readdirSync(reports);
    const md = readFileSync(path.join(reports, dir, readdirSync(path.join(reports, dir)).find((f) => f.endsWith('.md'))!), 'utf8');
    expect(md).toMatch(/#### Conditions/);
    expect(md).toMatch(/\| 1 \| candidate \|[^\n]*slowed by the hardware for heat[^\n]*\| measured again/);
  }, 400_000);
});
