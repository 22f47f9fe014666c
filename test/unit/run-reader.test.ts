import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { listRuns, readRunDetail } from '../../src-main/core/run-reader';
import { openWorkspace } from '../../src-main/core/workspace';
import { tempDir } from '../helpers/temp-dir';

const step = (i: number) => ({
  type: 'step', epoch: 1, epochs: 1, step: i, stepsPerEpoch: 5000, globalStep: i, totalSteps: 5000, loss: 1 / i, accuracy: null,
  lr: 0.1, gradNorm: 1, samplesPerSec: 100, phasesMs: { data: 0, forward: 1, loss: 0, backward: 1, optimizer: 0 },
});

describe('run reader', () => {
  it('thins a long run to at most 2,000 step events, keeping the first and the last, and skips a cut-off line', async () => {
    const t = tempDir();
    const ws = await openWorkspace(t.dir);
    const dir = path.join(t.dir, 'runs', '20261121-000000-abcdef');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ id: 'x', kind: 'train', status: 'completed', createdAt: '2026-11-21T00:00:00Z' }));
    const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify(step(i + 1)));
    writeFileSync(path.join(dir, 'events.jsonl'), lines.join('\n') + '\n{"type":"st');
    const detail = await readRunDetail(ws, '20261121-000000-abcdef');
    const steps = detail.events.filter((e) => e.type === 'step');
    expect(steps.length).toBeLessThanOrEqual(2001);
    expect(steps[0].globalStep).toBe(1);
    expect(steps.at(-1)?.globalStep).toBe(5000);
    expect((await listRuns(ws))[0]).toMatchObject({ kind: 'train', status: 'completed', problem: null });
    await expect(readRunDetail(ws, '../etc')).rejects.toMatchObject({ code: 'E_BAD_INPUT' });
    t.cleanup();
  });
});
