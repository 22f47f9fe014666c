// `trainbench find-batch-size` end to end on the CPU under --memory-limit, with the real engine
// and Debian's Fashion-MNIST: the search's answer is checked against its own measurements.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BatchSearchResult } from '../../src-main/api/batch-size';
import { BatchSearchResultSchema } from '../../src-main/api/batch-size';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { engineSearch, engineTrial } from '../helpers/target-detail';

const run = promisify(execFile);
const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

/** 256 MiB: the CNN fits a batch of about 150 with 10% headroom, so the search doubles, fails and bisects. */
const LIMIT = String(256 * 2 ** 20);

async function search(...args: string[]): Promise<BatchSearchResult> {
  const { stdout } = await run(process.execPath, [CLI, 'find-batch-size', '--model', 'cnn', '--data', 'fashion-mnist', '--threads', '2', '--json', '--workspace', ws.dir, ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return BatchSearchResultSchema.parse(JSON.parse(stdout));
}

async function fails(...args: string[]): Promise<string> {
  const err = (await run(process.execPath, [CLI, 'find-batch-size', '--workspace', ws.dir, ...args]).then(
    () => null,
    (e: { stderr: string }) => e,
  )) as { stderr: string } | null;
  if (!err) throw new Error('expected the command to fail');
  return err.stderr;
}

const isPowerOfTwo = (x: number) => Number.isInteger(Math.log2(x));

describe('trainbench find-batch-size on the CPU under --memory-limit', () => {
  let r: BatchSearchResult;
  beforeAll(async () => {
    r = await search('--memory-limit', LIMIT);
    console.log(`cnn / Fashion-MNIST under ${LIMIT} bytes: ${r.verdict} (${r.trials.length} trials, ${r.seconds.toFixed(1)} s)`);
  }, 120_000);

  it('finds a batch that fits: its trial trained and its measured peak leaves the headroom free', () => {
    expect(r.capacityBytes).toBe(Number(LIMIT));
    expect(r.largestFitting).not.toBeNull();
    const found = r.trials.find((t) => t.batchSize === r.largestFitting && t.accumulation === 1)!;
    expect(found.outcome).toBe('ok');
    expect(found.peakBytes).toBeLessThanOrEqual(engineSearch(r).usableBytes);
    expect(found.peakBytes).toBe(engineTrial(found).predicted.total); // the CPU's memory model is exact
    // What was measured on the CPU is the OS's count of the engine process during each trial that trained (issue 38).
    for (const t of r.trials) expect(engineTrial(t).processPeakRssBytes === null).toBe(t.outcome !== 'ok');
    expect(engineTrial(found).processPeakRssBytes).toBeGreaterThan(0);
    expect(r.recommended).not.toBeNull();
    expect(r.trials.find((t) => t.batchSize === r.recommended)?.fits).toBe(true);
  });

  it('tried the next power of two above the found batch and it ran out of memory (E_OOM)', () => {
    const found = r.largestFitting!;
    const next = 2 ** Math.floor(Math.log2(found) + 1);
    const trial = r.trials.find((t) => t.batchSize === next);
    expect(trial?.outcome).toBe('E_OOM');
    expect(trial?.message).toMatch(/out of memory under the CPU memory limit: .* requested \d+ bytes, \d+ free of 268435456/);
  });

  it('started from the memory model, doubled, then bisected between the last fit and the first failure', () => {
    expect(isPowerOfTwo(engineSearch(r).seedBatch)).toBe(true);
    expect(r.trials[0].batchSize).toBe(engineSearch(r).seedBatch);
    const ooms = r.trials.filter((t) => t.outcome === 'E_OOM');
    expect(ooms.length).toBeGreaterThanOrEqual(1);
    expect(r.trials.some((t) => !isPowerOfTwo(t.batchSize))).toBe(true); // the binary search ran
    for (const t of r.trials) expect(['ok', 'E_OOM', 'crash']).toContain(t.outcome);
  });

  it("frees everything after each OOM: the engine's training-buffer bytes are back at their baseline", () => {
    for (const t of r.trials) {
      expect(engineTrial(t).backAtBaseline).toBe(true);
      expect(engineTrial(t).memoryAfterBytes).toBe(engineTrial(t).memoryBeforeBytes);
    }
    // A batch that fits, tried after the OOMs, trained to the same peak it was predicted: nothing was left behind.
    const lastOom = Math.max(...r.trials.filter((t) => t.outcome === 'E_OOM').map((t) => t.index));
    const afterOom = r.trials.filter((t) => t.index > lastOom && t.outcome === 'ok');
    for (const t of afterOom) expect(t.peakBytes).toBe(engineTrial(t).predicted.total);
  });

  it('records the search as a run of kind batch-search with every trial as an event', () => {
    const dir = path.join(ws.dir, r.runDir);
    const record = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as { kind: string; status: string; result: BatchSearchResult };
    expect(record.kind).toBe('batch-search');
    expect(record.status).toBe('completed');
    expect(record.result.largestFitting).toBe(r.largestFitting);
    const events = readFileSync(path.join(dir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; batchSize: number });
    expect(events.map((e) => e.batchSize)).toEqual(r.trials.map((t) => t.batchSize));
    expect(r.verdict).toMatch(new RegExp(`^batch ${r.largestFitting!.toLocaleString('en-US')} fits with 10% headroom(;| but) .*use ${r.recommended!.toLocaleString('en-US')}`));
  });

  it('--global-batch finds a micro-batch that fits and an accumulation that make up the global batch', async () => {
    const g = await search('--memory-limit', LIMIT, '--global-batch', '600', '--steps', '2');
    expect(engineSearch(g).globalBatch).not.toBeNull();
    const { microBatch, accumulation, global } = engineSearch(g).globalBatch!;
    expect(global).toBe(600);
    expect(microBatch * accumulation).toBe(600);
    expect(microBatch).toBeLessThanOrEqual(g.largestFitting!);
    expect(accumulation).toBeGreaterThan(1);
    const verified = g.trials.find((t) => t.accumulation === accumulation && t.batchSize === microBatch);
    expect(verified?.outcome).toBe('ok');
    expect(g.verdict).toContain(`micro-batch ${microBatch} x ${accumulation} accumulation steps`);
  }, 120_000);
});

describe('trainbench find-batch-size refuses bad flags with the reason', () => {
  it('a CPU search without a memory limit', async () => {
    expect(await fails('--model', 'cnn', '--data', 'fashion-mnist')).toMatch(/trainbench: the CPU has no device memory for the search to fill: give a memory limit/);
  });
  it('a memory limit that is not a byte count', async () => {
    expect(await fails('--memory-limit', 'lots')).toMatch(/--memory-limit.*expected a byte count such as 1073741824, 1GiB or 512MiB, got "lots"/);
  });
  it('a headroom outside 0..0.9', async () => {
    expect(await fails('--memory-limit', '1GiB', '--headroom', '1.5')).toMatch(/--headroom must be a fraction from 0 to 0.9 \(or 0% to 90%\), got "1.5"/);
  });
  it('a global batch that is not a whole number', async () => {
    expect(await fails('--memory-limit', '1GiB', '--global-batch', '2.5')).toMatch(/--global-batch must be a whole number of at least 1, got "2.5"/);
  });
  it('a global batch larger than the data', async () => {
    expect(await fails('--model', 'cnn', '--data', 'fashion-mnist', '--memory-limit', '1GiB', '--global-batch', '70000')).toMatch(
      /trainbench: global batch 70000 is larger than the 60000 samples the training data gives per epoch/,
    );
  }, 60_000);
});
