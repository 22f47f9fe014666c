// Issue 14: the tutorial script under torchrun (2 processes, gloo): every rank reports, global samples/s is their sum.
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { requireBuilt } from '../helpers/repo';
import { freePort } from '../helpers/free-port';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, runCli, SCRIPTS, TORCHRUN } from './script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe('benchmark-training -- <command> through torchrun --nproc_per_node 2 (gloo, CPU)', () => {
  it('reports two ranks; global samples/s is their sum; the slowest data wait is named; nothing is left running', async () => {
    const mark = newMark();
    // Debian's torchrun on Python 3.11 cannot parse its default --redirects/--tee of "0" (IntFlag iteration
    // skips 0 since 3.11): naming stdout (1) for both makes it start, and still shows every rank's output.
    const command = [TORCHRUN, '--nproc_per_node', '2', '--master_port', String(await freePort()), '--redirects', '1', '--tee', '1', path.join(SCRIPTS, 'fashion_mnist_tutorial.py'), '--epochs', '1', '--limit', '4000'];
    const { code, stdout, stderr } = await runCli(['benchmark-training', '--json', '--no-output', '--warmup-steps', '3', '--steps', '15', '--repeat', '1', '--timeout', '120', '--workspace', ws.dir, '--env', `TB_TEST_MARK=${mark}`, '--', ...command]);
    expect(code, stderr).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.target.worldSize).toBe(2);
    // Not asked for (--collectives): no hook on DDP's buckets, no verdict.
    expect(r.target.collectives).toBeUndefined();
    expect(r.target.ranks.map((k) => k.rank)).toEqual([0, 1]);
    expect(new Set(r.target.ranks.map((k) => k.pid)).size).toBe(2);
    for (const k of r.target.ranks) {
      expect(k.measuredSteps).toBe(15);
      expect(k.batchSize).toBe(64);
      expect(k.samplesPerSec).toBeGreaterThan(0);
    }
    const rep = r.repetitions[0];
    expect(rep.target.ended).toBe('steps');
    expect(rep.target.processTree?.processes).toBeGreaterThanOrEqual(3); // torchrun and its two ranks
    expect(rep.samplesPerSec).toBeCloseTo(rep.target.ranks[0].samplesPerSec + rep.target.ranks[1].samplesPerSec, 6);
    expect(r.samplesPerSec).toBeCloseTo(rep.samplesPerSec, 6);
    const slowest = r.target.ranks.reduce((a, b) => (b.dataWaitMs > a.dataWaitMs ? b : a));
    expect(r.target.dataWait).toEqual({ rank: slowest.rank, msPerStep: slowest.dataWaitMs, percent: slowest.dataWaitPercent });
    expect(processesWithMark(mark)).toEqual([]);
  }, 180_000);
});
