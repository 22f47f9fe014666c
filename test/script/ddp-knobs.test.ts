// Issue 40: DistributedDataParallel's settings as the wizard's knobs on a job of several ranks. The probe reads the
// settings where the script makes its DDP model (the fixture's own 0.5 MB buckets), applies ddp.* overrides in every
// rank, and the wizard measures a bigger bucket A/B on the whole torchrun job, both ranks' samples counted.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { requireBuilt } from '../helpers/repo';
import { scriptWizard } from '../helpers/target-detail';
import { tempDir } from '../helpers/temp-dir';
import { binOf, INTERPRETERS, kindOf, runProbed, TORCH1 } from './probe-run';
import { runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
afterAll(() => ws.cleanup());

/** Two ranks on gloo; --standalone: torchrun takes a free port of its own for each launch (--redirects and --tee: Debian's 1.13 fails without them, or with them 0). */
const job = (python: string, steps: number) => [binOf(python, 'torchrun'), '--standalone', '--nproc_per_node', '2', '--redirects', '1', '--tee', '1', path.join(SCRIPTS, 'ddp_straggler.py'), '--steps', String(steps)];

// Two ranks of a torchrun job on a busy 2-core machine: a stalled start is tried once more.
describe.each(INTERPRETERS)('ddp.* overrides, $label', { retry: 1 }, (interp) => {
  it.skipIf(!interp.python)("says the script's own DDP settings and applies the asked ones in every rank", async () => {
    const set = { 'ddp.bucket_cap_mb': 4, 'ddp.gradient_as_bucket_view': true, 'ddp.static_graph': true };
    const run = await runProbed(job(interp.python!, 8), { env: { TB_PROBE_SET: JSON.stringify(set) }, timeoutMs: 180_000 });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(run.invalid).toEqual([]);
    expect(run.processes.map((p) => p.hello.rank).sort()).toEqual([0, 1]);
    for (const p of run.processes) {
      const applied = kindOf(p, 'applied').filter((m) => String(m.key).startsWith('ddp.'));
      expect(Object.fromEntries(applied.map((m) => [m.key, m.value])), `rank ${p.hello.rank}`).toEqual(set);
      for (const m of applied) expect(m.where).toMatch(/ddp_straggler\.py:\d+$/);
      // What the script asked for, not the override: the wizard proposes from it.
      expect(kindOf(p, 'ddp')).toEqual([{ type: 'ddp', bucketCapMb: 0.5, gradientAsBucketView: false, staticGraph: false, where: expect.stringMatching(/ddp_straggler\.py:\d+$/) }]);
    }
  }, 240_000);
});

describe('the wizard on a torchrun job of two ranks', { retry: 1 }, () => {
  it.skipIf(!TORCH1.python)("measures DDP's bucket size A/B on the whole job, from the script's own 0.5 MB, and the report carries the trial", async () => {
    requireBuilt();
    const args = ['optimise', '--json', '--repeat', '2', '--steps', '10', '--warmup-steps', '3', '--max-trials', '1', '--only', 'ddp.bucket_cap_mb', '--workspace', ws.dir];
    const { code, stdout, stderr } = await runCli([...args, '--', ...job(TORCH1.python!, 40)], 600_000);
    expect(code, stderr).toBe(0);
    const r = scriptWizard(JSON.parse(stdout));
    // Two ranks on a 2-core machine with half-megabyte buckets wait in their all-reduces for much of the step:
    // the baseline's collectives say so, and the diagnosis names communication with its share.
    expect(r.baseline!.collectives!.exposedShare).toBeGreaterThan(0);
    expect(r.diagnosis!.summary).toMatch(/% of it waits in all-reduces after the last rank arrived/);
    if (r.baseline!.collectives!.exposedShare > 0.1) expect(r.diagnosis!.bound).toBe('communication');
    expect(r.trials).toHaveLength(1);
    const [t] = r.trials;
    expect(t.change).toMatchObject({ knob: 'ddp.bucket_cap_mb', from: 0.5, to: 2, kind: 'pipeline', label: 'gradient buckets 0.5 -> 2 MB' });
    expect(t.change.hypothesis).toContain("the job's 2 ranks");
    expect(t.error).toBeNull();
    expect(t.candidateSamplesPerSec).toHaveLength(2);
    // Each rank's sum over the same seed and data: the bucket size does not change it.
    expect(t.lossDelta).not.toBeNull();
    expect(t.lossDelta!).toBeLessThan(1e-3);
    // Every launch is the whole job: the baseline's two, then each pair's two sides, the candidate with its override.
    const launches = readFileSync(path.join(ws.dir, r.runDir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; overrides?: Record<string, unknown> }).filter((e) => e.type === 'optimise.launch');
    expect(launches.map((e) => e.overrides?.['ddp.bucket_cap_mb'] ?? null).sort()).toEqual([2, 2, null, null, null, null]);
    const report = await runCli(['report', r.jobId, '--json', '--workspace', ws.dir]);
    expect(report.code, report.stderr).toBe(0);
    expect((JSON.parse(report.stdout) as { markdown: string }).markdown).toContain('gradient buckets 0.5 -> 2 MB');
  }, 600_000);

  it('refuses a bucket size that is not a whole number of MB, naming what it takes, before anything runs', async () => {
    const { code, stderr } = await runCli(['benchmark-training', '--set', 'ddp.bucket_cap_mb=0', '--workspace', ws.dir, '--', 'python3', 'x.py'], 60_000);
    expect(code).not.toBe(0);
    expect(stderr).toContain('bad value "0" for ddp.bucket_cap_mb: a whole number of MB from 1 to 16384');
  });
});
