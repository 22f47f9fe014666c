// Issue 12: `trainbench optimise` end to end on the CPU: real data (Debian's Fashion-MNIST), the built-in
// board network, a killed engine host, a killed CLI and a cancel, each followed by the wizard going on.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PHASE_NAMES_WITH_OTHER } from '../../src-main/api/benchmark';
import type { OptimiseResult } from '../../src-main/api/optimise';
import { OptimiseResultSchema, WizardStateSchema } from '../../src-main/api/optimise';
import { formatOptimise } from '../../src-main/cli/optimise-command';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir();
const FASHION = '/usr/share/datasets/fashion-mnist';
let dataFlag = '';
let tinyMlp = '';

beforeAll(() => {
  requireBuilt();
  // The uncached path reads records in place, which gzip forbids: the test's own uncompressed copy.
  const files = ['train-images-idx3-ubyte', 'train-labels-idx1-ubyte'].map((f) => {
    const out = path.join(ws.dir, f);
    writeFileSync(out, gunzipSync(readFileSync(path.join(FASHION, `${f}.gz`))));
    return out;
  });
  dataFlag = files.join(',');
  // A small MLP: little arithmetic per sample, so reading the records matters (the loader case of the issue).
  tinyMlp = path.join(ws.dir, 'mlp8.json');
  writeFileSync(tinyMlp, JSON.stringify({ family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] }));
});
afterAll(() => ws.cleanup());

const mlpFlags = (batch: number, ...extra: string[]) => ['--model', tinyMlp, '--data', dataFlag, '--batch-size', String(batch), '--warmup-steps', '3', '--workspace', ws.dir, ...extra];

async function optimise(args: string[]): Promise<OptimiseResult> {
  const { stdout } = await run(process.execPath, [CLI, 'optimise', ...args, '--json'], { maxBuffer: 64 * 1024 * 1024 });
  return OptimiseResultSchema.parse(JSON.parse(stdout));
}

const state = (id: string) => WizardStateSchema.parse(JSON.parse(readFileSync(path.join(ws.dir, 'optimise', id, 'state.json'), 'utf8')));
const runJson = (runId: string) => JSON.parse(readFileSync(path.join(ws.dir, 'runs', runId, 'run.json'), 'utf8')) as { kind: string; status: string; error?: { message: string } };

/** Every kept change was proven: its whole CI above 1 and its gain above the baseline's noise floor. */
function expectNothingUnproven(r: OptimiseResult): void {
  for (const t of r.trials.filter((x) => x.kept)) {
    expect(t.decision).toBe('accept');
    expect(t.speedup?.low).toBeGreaterThan(1);
    expect((t.speedup?.median ?? 0) - 1).toBeGreaterThan(r.baseline.noiseFloor);
  }
  expect(r.final.changes).toEqual(r.trials.filter((x) => x.kept).map((x) => x.change.label));
}

/** The CLI as a child process with its stderr lines observable, for kills at chosen moments. */
function spawnCli(args: string[]) {
  const child = spawn(process.execPath, [CLI, 'optimise', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  const watchers: { re: RegExp; resolve: (line: string) => void }[] = [];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const line of d.toString().split('\n')) {
      for (const w of watchers.splice(0)) {
        if (w.re.test(line)) w.resolve(line);
        else watchers.push(w);
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    line: (re: RegExp) => new Promise<string>((resolve) => watchers.push({ re, resolve })),
  };
}

/** The engine host the CLI forked (the only node child running engine-host.js). */
function engineHostOf(pid: number): number {
  const rows = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' }).trim().split('\n');
  const host = rows.find((r) => r.includes('engine-host'));
  if (!host) throw new Error(`no engine host among the children of ${pid}: ${rows.join(' | ')}`);
  return Number(host.trim().split(/\s+/)[0]);
}

describe('trainbench optimise (CPU)', () => {
  it('finds the loader bottleneck of a small MLP reading Fashion-MNIST from its source files, and keeps a change whose CI excludes 1', async () => {
    // Batches of 1,024: the arithmetic per step amortises better than the reads do, so data wait is the largest phase.
    const flags = mlpFlags(1024, '--read-from', 'source', '--loader-workers', '0', '--prefetch', '1', '--steps', '50', '--repeat', '5', '--max-trials', '4');
    const r = await optimise(flags);
    // First, that the loader really is the bottleneck: data wait is the largest phase of the baseline's step.
    const b = r.baseline;
    const largest = PHASE_NAMES_WITH_OTHER.reduce((a, p) => (b.phasesPercent[p] > b.phasesPercent[a] ? p : a));
    expect(largest).toBe('data');
    expect(r.diagnosis.findings.find((f) => f.id === 'data-wait')?.measurement.value).toBeCloseTo(b.phasesPercent.data, 9);
    expect(r.trials[0].change.knob).toBe('readFrom');

    const kept = r.trials.filter((t) => t.kept);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.every((t) => t.change.kind === 'pipeline')).toBe(true);
    expectNothingUnproven(r);
    // Pipeline changes train exactly the same: the loss guard saw the same mean loss.
    for (const t of r.trials.filter((x) => x.lossDelta !== null && x.change.kind === 'pipeline')) expect(t.lossDelta).toBeLessThan(1e-9);
    expect(r.final.config).not.toEqual(b.config);
    expect(r.final.speedup.median).toBeGreaterThan(0);
    expect(r.final.verdict).toContain('A/B/A/B');

    // The limits rest on measured rates, and the baseline is slower than every floor.
    expect(r.limits.compute.gemmGflops).toBeGreaterThan(0);
    expect(r.limits.read.readMBps).toBeGreaterThan(0);
    expect(r.limits.compute.baselineOverFloor).toBeGreaterThan(1);
    expect(r.limits.read.bytesPerSample).toBe(28 * 28 + 1);

    expect(runJson(r.runId)).toMatchObject({ kind: 'optimise', status: 'completed' });
    expect(state(r.optimiseId).status).toBe('completed');
    const text = formatOptimise(r);
    expect(text).toContain('read from the cache instead of the source files');
    expect(text).toMatch(/limits {5}floor per step/);
    console.log(`${text}\n(command: trainbench optimise ${flags.join(' ')})`);
  }, 300_000);

  it('says the board network is compute-bound on the CPU, keeps nothing it cannot prove, and under the reproducible preset refuses numerics and recipe changes', async () => {
    const r = await optimise(['--model', 'bottleneck_resnet', '--data', 'example-board', '--batch-size', '32', '--steps', '4', '--warmup-steps', '1', '--repeat', '3', '--max-trials', '2', '--preset', 'reproducible', '--workspace', ws.dir]);
    expect(r.diagnosis.bound).toBe('compute');
    const compute = r.diagnosis.findings.find((f) => f.id === 'compute-bound');
    const p = r.baseline.phasesPercent;
    expect(compute?.measurement.value).toBeCloseTo(p.forward + p.loss + p.backward + p.optimizer, 9);
    expect(compute?.measurement.value).toBeGreaterThan(70);
    expect(r.diagnosis.findings.some((f) => f.id === 'data-wait')).toBe(false);
    expect(r.limits.compute.stepMs).toBeLessThan(r.baseline.stepMs);
    expectNothingUnproven(r);
    expect(r.trials.every((t) => t.change.kind === 'pipeline')).toBe(true);
    const refused = r.skipped.filter((s) => s.why.startsWith('refused by the reproducible preset'));
    expect(refused.find((s) => s.change.knob === 'precision')?.why).toContain('alters the numerics');
    expect(refused.find((s) => s.change.knob === 'batchSize')?.why).toContain('changes the training recipe');
  }, 300_000);

  it('records a trial whose engine host is killed as crashed, and goes on in a restarted host', async () => {
    const cli = spawnCli([...mlpFlags(256, '--steps', '300', '--repeat', '3', '--max-trials', '2'), '--json']);
    await cli.line(/^trial 1\/2 max: .* pair 1\/3/);
    // Into the next repetition (each takes about half a second), then kill the host under it.
    await new Promise((resolve) => setTimeout(resolve, 150));
    process.kill(engineHostOf(cli.child.pid ?? 0), 'SIGKILL');
    const { code } = await cli.exited;
    expect(code, cli.output().stderr).toBe(0);
    const r = OptimiseResultSchema.parse(JSON.parse(cli.output().stdout));
    expect(r.trials[0].decision).toBe('crashed');
    expect(r.trials[0].error).toMatch(/engine host/);
    expect(r.trials[0].why).toContain('the wizard continues');
    expect(r.trials).toHaveLength(2);
    expect(r.trials[1].decision).not.toBe('crashed');
    expect(r.status).toBe('completed');
  }, 300_000);

  it('resumes from the saved state after the whole CLI is killed, and after a cancel', async () => {
    const args = mlpFlags(256, '--read-from', 'source', '--loader-workers', '0', '--prefetch', '1', '--steps', '100', '--repeat', '3', '--max-trials', '3');
    const first = spawnCli(args);
    const id = /optimisation (optimise-\S+)/.exec(await first.line(/^optimisation optimise-/))?.[1] ?? '';
    await first.line(/^trial 1: .* state saved/);
    first.child.kill('SIGKILL');
    await first.exited;
    const saved = state(id);
    expect(saved.status).toBe('running');
    expect(saved.trials).toHaveLength(1);

    const second = spawnCli(['--resume', id, '--workspace', ws.dir]);
    await second.line(/^trial 2: .* state saved/);
    second.child.kill('SIGINT');
    const { code } = await second.exited;
    expect(code).toBe(1);
    const message = `optimisation cancelled after 2 trials; resume it with trainbench optimise --resume ${id}`;
    expect(second.output().stderr).toContain(message);
    const cancelled = state(id);
    expect(cancelled).toMatchObject({ status: 'cancelled', message });
    expect(runJson(cancelled.runIds[1])).toMatchObject({ kind: 'optimise', status: 'cancelled', error: { message } });

    const r = await optimise(['--resume', id, '--workspace', ws.dir]);
    expect(r.status).toBe('completed');
    expect(r.trials.slice(0, 2)).toEqual(cancelled.trials);
    expect(r.trials[0]).toEqual(saved.trials[0]);
    expect(r.trials).toHaveLength(3);
    expect(state(id).runIds).toHaveLength(3);
    expect(r.runId).toBe(state(id).runIds[2]);
  }, 300_000);
});
