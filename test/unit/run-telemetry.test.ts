import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { EvenThinner } from '../../src-main/core/workspace/jsonl-lines';
import { MAX_TELEMETRY_SAMPLES, readRunTelemetry, readRunTelemetryCut } from '../../src-main/core/workspace/run-telemetry';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const sample = (t: number, util: number | null) => ({
  t,
  gpus: [{ index: 0, uuid: null, name: 'H100', utilizationGpu: util, utilizationMemory: null, memoryUsedMiB: 1000, memoryTotalMiB: 80000, temperatureC: null, powerDrawW: 300, powerLimitW: 700, clockSmMHz: null, clockMemMHz: null, pcieGen: null, pcieWidth: null, throttleReasons: null }],
  host: { cpuPerCore: [10, 30], memUsedBytes: 1, memAvailableBytes: 1, memTotalBytes: 2, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null },
});

let ws: Workspace;
let cleanup: () => void;
beforeEach(async () => {
  const t = tempDir('run-telemetry-');
  cleanup = t.cleanup;
  ws = await openWorkspace(t.dir);
  mkdirSync(path.join(ws.root, 'runs', 'r1'), { recursive: true });
});
afterEach(() => cleanup());

describe('readRunTelemetry', () => {
  it('reads the samples in order, skipping lines that are not samples and a line cut off by a kill', async () => {
    const lines = [JSON.stringify(sample(1000, 50)), '{"t": "not a sample"}', 'garbage', JSON.stringify(sample(1500, 90)), '{"t":2000,"gpus":[{"ind'];
    writeFileSync(path.join(ws.root, 'runs', 'r1', 'telemetry.jsonl'), lines.join('\n'));
    const samples = await readRunTelemetry(ws, 'r1');
    expect(samples.map((s) => [s.t, s.gpus[0].utilizationGpu])).toEqual([[1000, 50], [1500, 90]]);
  });

  it('has none for a run that recorded none', async () => {
    expect(await readRunTelemetry(ws, 'r1')).toEqual([]);
  });

  it('thins a long recording evenly, keeping the first and the last sample', async () => {
    const n = 5 * MAX_TELEMETRY_SAMPLES + 7;
    writeFileSync(path.join(ws.root, 'runs', 'r1', 'telemetry.jsonl'), Array.from({ length: n }, (_, i) => JSON.stringify(sample(i, i % 100))).join('\n') + '\n');
    const samples = await readRunTelemetry(ws, 'r1');
    expect(samples.length).toBeLessThanOrEqual(MAX_TELEMETRY_SAMPLES + 1);
    expect(samples.length).toBeGreaterThan(MAX_TELEMETRY_SAMPLES / 2);
    expect(samples[0].t).toBe(0);
    expect(samples.at(-1)?.t).toBe(n - 1);
    const gaps = new Set(samples.slice(1, -1).map((s, i) => s.t - samples[i].t));
    expect(gaps.size).toBe(1); // evenly spaced, but for the last sample
  });
});

describe("readRunTelemetry on a benchmark's or a wizard's files (one per repetition or launch)", () => {
  const rep = (i: number, ts: number[]) => writeFileSync(path.join(ws.root, 'runs', 'r1', `telemetry-rep${i}.jsonl`), ts.map((t) => JSON.stringify(sample(t, i))).join('\n') + '\n');

  it('reads every repetition, oldest first, and leaves out a link in a file\'s place', async () => {
    rep(2, [3000, 3500]);
    rep(10, [9000]);
    rep(1, [1000, 1500]);
    symlinkSync('/etc/passwd', path.join(ws.root, 'runs', 'r1', 'telemetry-rep3.jsonl'));
    writeFileSync(path.join(ws.root, 'runs', 'r1', 'telemetry-repx.jsonl'), JSON.stringify(sample(1, 0))); // not a name the runs write
    const samples = await readRunTelemetry(ws, 'r1');
    expect(samples.map((s) => [s.t, s.gpus[0].utilizationGpu])).toEqual([[1000, 1], [1500, 1], [3000, 2], [3500, 2], [9000, 10]]);
  });

  it('reads at most 256 files and thins them together, and runs.get says what it left out', async () => {
    for (let i = 1; i <= 300; i++) rep(i, [i * 10, i * 10 + 5, i * 10 + 7, i * 10 + 9, i * 10 + 1, i * 10 + 2, i * 10 + 3, i * 10 + 4]);
    const { samples, cut } = await readRunTelemetryCut(ws, 'r1');
    expect(samples.length).toBeLessThanOrEqual(MAX_TELEMETRY_SAMPLES + 1);
    expect(samples.at(-1)?.t).toBeLessThan(257 * 10);
    expect(samples.every((s, i) => i === 0 || s.t >= samples[i - 1].t)).toBe(true);
    expect(cut.map((c) => c.note)).toEqual(['runs/r1 holds 300 telemetry files; the first 256 were read']);
  });
});

describe('EvenThinner', () => {
  it('keeps everything below its limit', () => {
    const th = new EvenThinner<number>(10);
    for (let i = 0; i < 7; i++) th.push(() => i);
    expect(th.result()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('makes only the items it keeps (and the last), so a long stream is parsed only where sampled', () => {
    const th = new EvenThinner<number>(100);
    let made = 0;
    const n = 100_000;
    for (let i = 0; i < n; i++) th.push(() => (made++, i));
    const kept = th.result();
    expect(kept.at(-1)).toBe(n - 1);
    expect(kept.length).toBeLessThanOrEqual(101);
    expect(made).toBeLessThan(2000); // about max * (1 + 1/2 + 1/4 ...) * 2, far from n
  });

  it('samples a stream of mostly junk as sparsely: its items evenly spaced, parsing bounded by the limit, not the lines', () => {
    // A planted file of millions of lines that are not samples ("{}") was parsed line by line: a minute of the server.
    const th = new EvenThinner<number>(100);
    const n = 1_000_000;
    for (let i = 0; i < n; i++) th.push(() => (i % 1024 === 0 ? i : null));
    expect(th.made).toBeLessThan(2000);
    const kept = th.result();
    expect(kept.length).toBeGreaterThan(100 / 4); // one position in 1024 is an item: the samples that landed there
    expect(kept.every((k) => k % 1024 === 0)).toBe(true);
    const gaps = kept.slice(1).map((k, i) => k - kept[i]);
    expect(Math.max(...gaps)).toBe(Math.min(...gaps)); // evenly spaced
  });

  it('keeps the last item even when the one before it was unreadable', () => {
    const th = new EvenThinner<number>(10);
    th.push(() => 1);
    th.push(() => null);
    th.push(() => 3);
    expect(th.result()).toEqual([1, 3]);
  });
});
