import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { RunRecordJson } from '../../src-main/api/run-record';
import { RUN_HEARTBEAT_STALE_MS, RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { lastStepText } from '../../src-main/api/training';
import { RunAnnotator } from '../../src-main/core/workspace/run-notes';
import { listRuns, readRunDetail } from '../../src-main/core/workspace/run-reader';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const step = (i: number, total = 5000) => ({
  type: 'step', epoch: 1, epochs: 1, step: i, stepsPerEpoch: total, globalStep: i, totalSteps: total, loss: 1 / i, accuracy: null,
  lr: 0.1, gradNorm: 1, samplesPerSec: 100, phasesMs: { data: 0, forward: 1, loss: 0, backward: 1, optimizer: 0 },
});

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

function record(overrides: Partial<RunRecordJson> = {}): RunRecordJson {
  return {
    schemaVersion: RUN_SCHEMA_VERSION,
    id: 'x',
    kind: 'train',
    status: 'completed',
    createdAt: '2026-11-21T00:00:00Z',
    config: { spec: { family: 'mlp' }, cachedData: { description: 'blobs (10 records)' } },
    ...overrides,
  };
}

/** A pid that belonged to a process which has exited (and been reaped) by now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  if (!child.pid) throw new Error('could not start a short-lived process');
  return child.pid;
}

let t: { dir: string; cleanup(): void };
let ws: Workspace;
beforeEach(async () => {
  t = tempDir();
  ws = await openWorkspace(t.dir);
});
afterEach(() => t.cleanup());

function writeRun(id: string, runJson: unknown, events?: string): void {
  const dir = path.join(t.dir, 'runs', id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'run.json'), typeof runJson === 'string' ? runJson : JSON.stringify(runJson));
  if (events !== undefined) writeFileSync(path.join(dir, 'events.jsonl'), events);
}

const eventLines = (n: number, total = 5000) => Array.from({ length: n }, (_, i) => JSON.stringify(step(i + 1, total))).join('\n') + '\n';

describe('run reader', () => {
  it('streams a huge events.jsonl in bounded memory: 200,000 steps and an endless line (a flood once made runs.get take gigabytes)', async () => {
    const id = '20261121-000009-b16b16';
    const endless = 'x'.repeat(3 << 20); // 3 MiB without a newline, then more events
    writeRun(id, record(), eventLines(100_000, 200_000) + endless + '\n' + eventLines(100_000, 200_000).replace(/"globalStep":(\d+)/g, (_, n) => `"globalStep":${Number(n) + 100_000}`));
    // Serve mode answers every client from this one event loop: reading must not hold it for long.
    let lastTick = performance.now();
    let longestStall = 0;
    const ticker = setInterval(() => {
      longestStall = Math.max(longestStall, performance.now() - lastTick);
      lastTick = performance.now();
    }, 5);
    const detail = await readRunDetail(ws, id);
    await new Promise((resolve) => setTimeout(resolve, 20)); // let the ticker see a stall that ended with the read
    clearInterval(ticker);
    console.log(`longest event-loop stall while reading: ${longestStall.toFixed(0)} ms`);
    expect(longestStall).toBeLessThan(400);
    const steps = detail.events.filter((e) => e.type === 'step');
    expect(steps.length).toBeLessThanOrEqual(2001);
    expect(steps.length).toBeGreaterThan(1000);
    expect(steps[0].globalStep).toBe(1);
    expect(steps.at(-1)?.globalStep).toBe(200_000);
    const positions = steps.map((e) => (e.type === 'step' ? e.globalStep : 0));
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it('thins a long run to at most 2,000 step events, keeping the first and the last, and skips a cut-off line', async () => {
    writeRun('20261121-000000-abcdef', record(), eventLines(5000) + '{"type":"st');
    const detail = await readRunDetail(ws, '20261121-000000-abcdef');
    const steps = detail.events.filter((e) => e.type === 'step');
    expect(steps.length).toBeLessThanOrEqual(2001);
    expect(steps[0].globalStep).toBe(1);
    expect(steps.at(-1)?.globalStep).toBe(5000);
    expect((await listRuns(ws))[0]).toMatchObject({ kind: 'train', status: 'completed', problem: null, lastStep: null, interruption: null });
    await expect(readRunDetail(ws, '../etc')).rejects.toMatchObject({ code: 'E_BAD_INPUT' });
    await expect(readRunDetail(ws, '20261121-000000-000000')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('no run') });
  });

  it('calls a running run whose process on this host is gone interrupted, with its last step (a cut-off last line ignored)', async () => {
    const pid = deadPid();
    const owner = { pid, host: os.hostname(), startedAt: ago(5000) };
    writeRun('20261121-000001-dead00', record({ status: 'running', createdAt: ago(5000), owner, heartbeatAt: ago(1000) }), eventLines(37, 938) + '{"type":"step","epoch":1,"ep');
    const [summary] = await listRuns(ws);
    expect(summary).toMatchObject({
      status: 'interrupted',
      lastStep: { globalStep: 37, totalSteps: 938, epoch: 1, epochs: 1 },
      interruption: expect.stringContaining(`process ${pid} on ${os.hostname()} is gone`),
      problem: null,
    });
    expect((await readRunDetail(ws, '20261121-000001-dead00')).summary.status).toBe('interrupted');
  });

  it('keeps a run running while its owner is alive and its heartbeat fresh, and reports how far it got', async () => {
    const owner = { pid: process.pid, host: os.hostname(), startedAt: ago(5000) };
    writeRun('20261121-000002-live00', record({ status: 'running', createdAt: ago(5000), owner, heartbeatAt: ago(2000) }), eventLines(12, 100));
    const [summary] = await listRuns(ws);
    expect(summary).toMatchObject({ status: 'running', interruption: null, lastStep: { globalStep: 12, totalSteps: 100 } });
  });

  it("reports how far a running script got from rank 0's step events (no epochs, no total), and words it without them", async () => {
    const owner = { pid: process.pid, host: os.hostname(), startedAt: ago(5000) };
    const steps = [1, 2, 3].flatMap((step) => [0, 1].map((rank) => JSON.stringify({ type: 'script.step', step: step + rank * 10, rank, t: 0 })));
    writeRun('20261121-000002-script', record({ status: 'running', createdAt: ago(5000), owner, heartbeatAt: ago(2000) }), `${steps.join('\n')}\n`);
    const summary = (await listRuns(ws)).find((r) => r.id === '20261121-000002-script');
    expect(summary).toMatchObject({ status: 'running', lastStep: { globalStep: 3, totalSteps: null, epoch: null, epochs: null } });
    expect(lastStepText(summary?.lastStep ?? null)).toBe('at step 3');
    expect(lastStepText({ globalStep: 1234, totalSteps: 9370, epoch: 2, epochs: 10 })).toBe('at step 1,234 of 9,370 (epoch 2/10)');
  });

  it('judges a run owned by another host by its heartbeat alone', async () => {
    const owner = { pid: process.pid, host: 'rig-elsewhere.invalid', startedAt: ago(10 * 60_000) };
    writeRun('20261121-000003-fresh0', record({ status: 'running', createdAt: ago(10 * 60_000), owner, heartbeatAt: ago(3000) }));
    writeRun('20261121-000004-stale0', record({ status: 'running', createdAt: ago(10 * 60_000), owner, heartbeatAt: ago(RUN_HEARTBEAT_STALE_MS + 30_000) }), '');
    const byId = Object.fromEntries((await listRuns(ws)).map((r) => [r.id, r]));
    expect(byId['20261121-000003-fresh0']).toMatchObject({ status: 'running', interruption: null, lastStep: null });
    expect(byId['20261121-000004-stale0']).toMatchObject({
      status: 'interrupted',
      lastStep: null,
      interruption: expect.stringMatching(/^no heartbeat from process \d+ on rig-elsewhere.invalid for 9\d s/),
    });
  });

  it('calls a running record without a heartbeat (written before version 2) interrupted once it is older than the timeout', async () => {
    const { owner: _owner, heartbeatAt: _beat, ...v1 } = record({ schemaVersion: 1, status: 'running', createdAt: ago(3_600_000) });
    writeRun('20261121-000005-old000', v1, eventLines(3));
    expect((await listRuns(ws))[0]).toMatchObject({ status: 'interrupted', lastStep: { globalStep: 3 }, interruption: expect.stringContaining('no heartbeat') });
  });

  it('finds the last step behind a long damaged tail', async () => {
    const owner = { pid: deadPid(), host: os.hostname(), startedAt: ago(5000) };
    const junk = `${'x'.repeat(300 * 1024)}\n${JSON.stringify({ type: 'epoch', epoch: 1 })}\n`;
    writeRun('20261121-000006-tail00', record({ status: 'running', createdAt: ago(5000), owner, heartbeatAt: ago(5000) }), eventLines(900, 900) + junk);
    expect((await listRuns(ws))[0]).toMatchObject({ status: 'interrupted', lastStep: { globalStep: 900 } });
  });

  it('lists a run.json from a newer Trainbench, or one that breaks the schema, with the problem; the others still read', async () => {
    writeRun('20261121-000007-newer0', record({ schemaVersion: RUN_SCHEMA_VERSION + 1, status: 'exploded' } as unknown as RunRecordJson));
    writeRun('20261121-000008-badst0', { ...record(), status: 'exploded' });
    writeRun('20261121-000009-nover0', { id: 'x', kind: 'train', status: 'completed', createdAt: '2026-11-21T00:00:00Z', config: {} });
    writeRun('20261121-000010-notjs0', '{ not json');
    writeRun('20261121-000011-good00', record());
    const byId = Object.fromEntries((await listRuns(ws)).map((r) => [r.id, r]));
    expect(byId['20261121-000007-newer0']).toMatchObject({
      status: 'unreadable',
      problem: `run.json was written by a newer Trainbench (schema version ${RUN_SCHEMA_VERSION + 1}; this one reads up to ${RUN_SCHEMA_VERSION}): update Trainbench to read it`,
    });
    expect(byId['20261121-000008-badst0']).toMatchObject({ status: 'unreadable', problem: expect.stringMatching(/^run.json does not match its schema: run.status: /) });
    expect(byId['20261121-000009-nover0']).toMatchObject({ status: 'unreadable', problem: expect.stringContaining('run.schemaVersion') });
    expect(byId['20261121-000010-notjs0']).toMatchObject({ status: 'unreadable', problem: expect.stringContaining('not valid JSON') });
    expect(byId['20261121-000011-good00']).toMatchObject({ status: 'completed', title: 'mlp on blobs (10 records)', problem: null });
    await expect(readRunDetail(ws, '20261121-000007-newer0')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringContaining('newer Trainbench') });
  });

  it('gives the loader benchmark its best cached rate and the batch-size search its recommended trial\'s, not dashes', async () => {
    const row = (workers: number, samplesPerSec: number) => ({ workers, prefetch: 2, samplesPerSec });
    // The result names the cache by id; the title by the dataset's name, as the Datasets area lists it.
    writeRun('20261124-000001-loader', record({ kind: 'loader-benchmark', config: { dataset: 'blobs' }, result: { dataset: 'blobs-0123456789ab', cached: [row(0, 900), row(2, 2500), row(1, 1800)] } }));
    const trial = (batchSize: number, accumulation: number, samplesPerSec: number | null) => ({ batchSize, accumulation, samplesPerSec });
    writeRun('20261124-000002-search', record({ kind: 'batch-search', result: { recommended: 256, trials: [trial(128, 1, 5000), trial(256, 1, 6100), trial(512, 1, null), trial(256, 2, 7000)] } }));
    writeRun('20261124-000003-cancelled', record({ status: 'cancelled', config: { spec: { family: 'cnn' }, data: { kind: 'example-board' } } as never }));
    const byId = new Map((await listRuns(ws)).map((r) => [r.id, r]));
    expect(byId.get('20261124-000001-loader')).toMatchObject({ title: 'loader benchmark of blobs', samplesPerSec: 2500 });
    expect(byId.get('20261124-000002-search')?.samplesPerSec).toBe(6100);
    expect(byId.get('20261124-000003-cancelled')?.title).toBe('cnn on example-board');
  });

  it("names an optimisation by its model and data with its final rate, and a script target by its command", async () => {
    writeRun('20261124-000004-opt', record({ kind: 'optimise', result: { final: { samplesPerSec: { low: 1, median: 4200, high: 5000 } } } }));
    const script = { target: { kind: 'script', command: ['python3', 'train.py', '--epochs', '1'], cwd: '/home/me/proj' } };
    writeRun('20261124-000005-script', record({ kind: 'benchmark', config: script as never, result: { samplesPerSec: 12000 } as never }));
    writeRun('20261124-000006-script-opt', record({ kind: 'optimise', config: { target: { ...script.target, command: ['python3', 'x'.repeat(200)] } } as never }));
    const byId = new Map((await listRuns(ws)).map((r) => [r.id, r]));
    expect(byId.get('20261124-000004-opt')).toMatchObject({ title: 'optimisation: mlp on blobs (10 records)', samplesPerSec: 4200 });
    expect(byId.get('20261124-000005-script')).toMatchObject({ title: 'training benchmark: script python3 train.py --epochs 1', samplesPerSec: 12000 });
    const long = byId.get('20261124-000006-script-opt')?.title ?? '';
    expect(long.startsWith('optimisation: script python3 xxx')).toBe(true);
    // A long command keeps its start and its end (the arguments that tell runs apart), its middle cut.
    expect(long).toMatch(/^optimisation: script python3 x+…x+$/);
    expect(long.length).toBeLessThanOrEqual('optimisation: script '.length + 100);
  });

  it('says of a run folder that is a link, or a run.json that is a folder, what the runs list says; and writes no notes into either', async () => {
    const outside = tempDir();
    try {
      writeFileSync(path.join(outside.dir, 'run.json'), JSON.stringify(record({ id: 'elsewhere' })));
      mkdirSync(path.join(t.dir, 'runs'), { recursive: true });
      symlinkSync(outside.dir, path.join(t.dir, 'runs', '20261204-120000-aaaaaa'));
      mkdirSync(path.join(t.dir, 'runs', '20261204-120000-bbbbbb', 'run.json'), { recursive: true });
      const listed = await listRuns(ws);
      expect(listed.map((r) => [r.id, r.status])).toEqual([['20261204-120000-bbbbbb', 'unreadable'], ['20261204-120000-aaaaaa', 'unreadable']]);
      // runs.get and runs.annotate: not "there is no run" for a run the list shows, but what is wrong with it.
      await expect(readRunDetail(ws, '20261204-120000-aaaaaa')).rejects.toMatchObject({ code: 'E_DATA', message: 'run 20261204-120000-aaaaaa cannot be read: path "runs/20261204-120000-aaaaaa" leads outside the workspace through a link; copy the files into the workspace instead' });
      await expect(readRunDetail(ws, '20261204-120000-bbbbbb')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/^run 20261204-120000-bbbbbb cannot be read: cannot read runs\/20261204-120000-bbbbbb\/run.json: /) });
      const notes = new RunAnnotator(ws);
      await expect(notes.annotate({ id: '20261204-120000-aaaaaa', notes: 'planted' })).rejects.toMatchObject({ code: 'E_DATA' });
      await expect(notes.annotate({ id: '20261204-120000-bbbbbb', notes: 'planted' })).rejects.toMatchObject({ code: 'E_DATA' });
      expect(existsSync(path.join(outside.dir, 'notes.json'))).toBe(false);
      expect(existsSync(path.join(t.dir, 'runs', '20261204-120000-bbbbbb', 'notes.json'))).toBe(false);
      // A link to a run inside the workspace: a link all the same.
      writeRun('20261204-120000-eeeeee', record({ id: '20261204-120000-eeeeee' }));
      symlinkSync(path.join(t.dir, 'runs', '20261204-120000-eeeeee'), path.join(t.dir, 'runs', '20261204-120000-dddddd'));
      await expect(readRunDetail(ws, '20261204-120000-dddddd')).rejects.toMatchObject({ code: 'E_DATA', message: 'run 20261204-120000-dddddd cannot be read: runs/20261204-120000-dddddd is a link: workspace folders are used only as themselves' });
      await expect(notes.annotate({ id: '20261204-120000-dddddd', notes: 'planted' })).rejects.toMatchObject({ code: 'E_DATA' });
      expect(existsSync(path.join(t.dir, 'runs', '20261204-120000-eeeeee', 'notes.json'))).toBe(false);
      // A run that is not there at all is still "no run".
      await expect(readRunDetail(ws, '20261204-120000-cccccc')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: 'there is no run 20261204-120000-cccccc in the workspace (trainbench runs lists them)' });
    } finally {
      outside.cleanup();
    }
  });
});
