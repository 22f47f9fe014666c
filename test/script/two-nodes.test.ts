// Issue 40: a torchrun job across two machines, measured from one. Two network namespaces joined by a veth pair stand
// for two nodes (root only: CI runs as root). Node 0 runs benchmark-training with --collector on its veth address;
// it prints a join code, and node 1 (in the other namespace) runs its part through `trainbench join CODE -- torchrun`.
// Both ranks report to the one collector over the veth, their clocks are measured against it, and the rank that
// sleeps before each backward is named the straggler. A link throttled with tc tbf shows as exposed communication and a
// lower bus bandwidth. A wrong code is refused, naming what is wrong.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { freePort } from '../helpers/free-port';
import { requireBuilt } from '../helpers/repo';
import { scriptBenchmark, scriptWizard } from '../helpers/target-detail';
import { tempDir } from '../helpers/temp-dir';
import { twoNamespaces } from '../helpers/two-namespaces';
import { binOf, TORCH2 } from './probe-run';
import { runCli, SCRIPTS } from './script-helpers';

// Timing the collectives needs torch 2 (the probe declines on 1.x): the job runs on the torch 2.13 virtual environment.
const TORCHRUN = TORCH2.python ? binOf(TORCH2.python, 'torchrun') : '';

const CLI = path.resolve(__dirname, '../../bin/trainbench.js');
const { root, ns, veth0, veth1, addr0, ip } = twoNamespaces();
const ws = tempDir();
afterAll(() => ws.cleanup());

/**
 * Node 0's benchmark or wizard (`measure`: its command and options), with node 1 started in the other namespace as
 * soon as the code is printed; node 1 follows every launch until node 0's job ends.
 */
async function twoNodes(measure: string[], slowMs = 30): Promise<{ code: number; stdout: string; stderr: string; node1: { code: number; output: string } }> {
  requireBuilt();
  const port = String(await freePort());
  // torchrun's static rendezvous: the c10d one hosts its store only where the endpoint is the host name's own address.
  const job = (nodeRank: number) => [TORCHRUN, '--nnodes', '2', '--node_rank', String(nodeRank), '--nproc_per_node', '1', '--master_addr', addr0, '--master_port', port, '--redirects', '1', '--tee', '1',
    path.join(SCRIPTS, 'ddp_straggler.py'), '--steps', '40', '--slow-rank', '1', '--slow-ms', String(slowMs)];
  // Gloo picks the interface of the host name's address, which the other namespace cannot reach: each node names its veth.
  const node0 = spawn(process.execPath, [CLI, ...measure, '--collector', addr0, '--env', `GLOO_SOCKET_IFNAME=${veth0}`, '--workspace', ws.dir, '--', ...job(0)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let node1: Promise<{ code: number; output: string }> | null = null;
  node0.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  node0.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    const code = /trainbench join (\S+) --/.exec(stderr)?.[1];
    if (!code || node1) return;
    node1 = new Promise((resolve) => {
      const child = spawn('ip', ['netns', 'exec', ns, 'env', `GLOO_SOCKET_IFNAME=${veth1}`, process.execPath, CLI, 'join', code, '--', ...job(1)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 400_000);
      child.on('close', (status) => {
        clearTimeout(timer);
        resolve({ code: status ?? 1, output });
      });
    });
  });
  const code = await new Promise<number>((resolve) => node0.on('close', (status) => resolve(status ?? 1)));
  return { code, stdout, stderr, node1: node1 ? await node1 : { code: -1, output: 'node 1 was never started: no join code was printed' } };
}

describe('a torchrun job across two nodes (network namespaces), measured from node 0', { retry: 1 }, () => {
  it.skipIf(!root || !TORCH2.python)('hears both nodes\' ranks on one collector, measures their clocks and names the straggler', async () => {
    const { code, stdout, stderr, node1 } = await twoNodes(['benchmark-training', '--json', '--no-output', '--one-node', '--warmup-steps', '3', '--steps', '20', '--repeat', '1', '--timeout', '150']);
    expect(node1.code, node1.output.slice(-3000)).toBe(0);
    expect(code, stderr.slice(-3000)).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.target.worldSize).toBe(2);
    expect(r.target.ranks.map((k) => k.rank)).toEqual([0, 1]);
    const c = r.target.collectives!;
    expect(c.straggler, c.why).toBe(1);
    expect(c.phase).toBe('host');
    expect(c.clocks).toHaveLength(2);
    for (const k of c.clocks) expect(k.uncertaintyMs, `rank ${k.rank}`).not.toBeNull();
    // The floor between the two nodes: the step's gradients all-reduced alone over the veth.
    expect(c.floor!.busBytesPerSec).toBeGreaterThan(0);
    // --one-node: the job launched once more on node 0 alone (its one rank, not slowed by rank 1's sleep), and the
    // two-node job's samples/s over twice that.
    expect(c.scaling).toMatchObject({ nodes: 2 });
    expect(c.scaling!.oneNodeSamplesPerSec).toBeGreaterThan(0);
    expect(c.scaling!.efficiency).toBeCloseTo(r.samplesPerSecCi.median / (2 * c.scaling!.oneNodeSamplesPerSec), 6);
    console.log(`two nodes over veth: ${r.samplesPerSecCi.median.toFixed(0)} samples/s, node 0 alone ${c.scaling!.oneNodeSamplesPerSec.toFixed(0)}: scaling efficiency ${(100 * c.scaling!.efficiency).toFixed(0)}%; floor ${(c.floor!.busBytesPerSec / 1e9).toFixed(2)} GB/s`);
  }, 300_000);

  it.skipIf(!root || !TORCH2.python)("the wizard measures DDP's bucket size A/B on the whole two-node job, node 1 following every launch from one code", async () => {
    const { code, stdout, stderr, node1 } = await twoNodes(['optimise', '--json', '--repeat', '2', '--steps', '10', '--warmup-steps', '3', '--max-trials', '1', '--only', 'ddp.bucket_cap_mb', '--timeout', '150'], 0);
    expect(code, stderr.slice(-3000)).toBe(0);
    // Node 1 followed the six launches (the baseline's two, each pair's two sides) and ended with the job.
    expect(node1.code, node1.output.slice(-3000)).toBe(0);
    expect(stderr.match(/trainbench join \S+ --/g)).toHaveLength(1);
    const r = scriptWizard(JSON.parse(stdout));
    expect(r.trials).toHaveLength(1);
    const [t] = r.trials;
    expect(t.change).toMatchObject({ knob: 'ddp.bucket_cap_mb', from: 0.5, to: 2, label: 'gradient buckets 0.5 -> 2 MB' });
    expect(t.error).toBeNull();
    expect(t.candidateSamplesPerSec).toHaveLength(2);
    expect(t.lossDelta!).toBeLessThan(1e-3);
    const report = await runCli(['report', r.jobId, '--json', '--workspace', ws.dir]);
    expect(report.code, report.stderr).toBe(0);
    expect((JSON.parse(report.stdout) as { markdown: string }).markdown).toContain('gradient buckets 0.5 -> 2 MB');
  }, 600_000);

  it.skipIf(!root || !TORCH2.python)('a link limited to 100 Mbit/s (tc tbf on both ends) shows as more exposed communication and a lower bus bandwidth', async () => {
    // Each bucket timed: the all-reduces' bus bandwidth is measured, on the veth as it is and then throttled.
    const measure = ['benchmark-training', '--json', '--no-output', '--collectives-per-bucket', '--warmup-steps', '3', '--steps', '10', '--repeat', '1', '--timeout', '150'];
    const collectivesOf = (run: Awaited<ReturnType<typeof twoNodes>>) => {
      expect(run.node1.code, run.node1.output.slice(-3000)).toBe(0);
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      return scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(run.stdout))).target.collectives!;
    };
    const free = collectivesOf(await twoNodes(measure, 0));
    // The clean job: nothing planted, so no rank is named late in host work (the planted straggler's phase). One rank
    // trailing in compute is a real straggler on a busy 2-core machine (it shares a core with other work) and may be named.
    expect(free.straggler === null || free.phase !== 'host', free.why).toBe(true);
    const tbf = ['root', 'tbf', 'rate', '100mbit', 'burst', '64kb', 'latency', '100ms'];
    ip('netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', veth1, ...tbf);
    execFileSync('tc', ['qdisc', 'add', 'dev', veth0, ...tbf], { stdio: 'pipe' });
    let slow: typeof free;
    try {
      slow = collectivesOf(await twoNodes(measure, 0));
    } finally {
      execFileSync('tc', ['qdisc', 'del', 'dev', veth0, 'root'], { stdio: 'pipe' });
      ip('netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', veth1, 'root');
    }
    console.log(`clean job: ${free.why}`);
    console.log(`veth as is: bus ${(free.busBytesPerSec! / 1e6).toFixed(0)} MB/s, exposed ${(100 * free.exposedShare).toFixed(1)}%; at 100 Mbit/s: bus ${(slow.busBytesPerSec! / 1e6).toFixed(1)} MB/s, exposed ${(100 * slow.exposedShare).toFixed(1)}%`);
    // 100 Mbit/s carries at most 12.5 MB/s each way: the bus bandwidth falls below it, far below the free link's.
    expect(slow.busBytesPerSec!).toBeLessThan(12.5e6);
    expect(slow.busBytesPerSec!).toBeLessThan(free.busBytesPerSec! / 4);
    expect(slow.floor!.busBytesPerSec).toBeLessThan(free.floor!.busBytesPerSec / 4);
    // The step now mostly waits on the wire, after both ranks arrived.
    expect(slow.exposedShare).toBeGreaterThan(Math.max(0.5, free.exposedShare));
  }, 600_000);

  it('refuses a join code that is not one, naming what is wrong, and runs nothing', async () => {
    const bad = await runCli(['join', 'tbj1.eyJQQVRIIjoiL3RtcCJ9', '--', 'touch', path.join(ws.dir, 'ran')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('is not a join code: it names "PATH", not one of the probe\'s variables');
    const single = await runCli(['benchmark-training', '--one-node', '--workspace', ws.dir, '--', 'python3', 'train.py']);
    expect(single.stderr).toContain('--one-node needs a torchrun command of more than one node (--nnodes 2 or more)');
    const none = await runCli(['join', 'abc', '--', 'true']);
    expect(none.stderr).toContain('is not a join code: it does not start with tbf1. (or tbj1. for one launch)');
    const forged = await runCli(['join', `tbf1.${Buffer.from(JSON.stringify({ address: '127.0.0.1:1', token: 'x' })).toString('base64url')}`, '--', 'touch', path.join(ws.dir, 'ran')]);
    expect(forged.stderr).toContain('is not a join code: it has no token');
  });
});
