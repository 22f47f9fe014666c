// Issue 11: benchmarks name their warm-up; the engine starts the steady-state clock after exactly that many steps.
import { describe, expect, it } from 'vitest';

import { blobs, loadAddon, MLP_SPEC, thrown } from '../helpers/native';

const addon = loadAddon();
const json = JSON.stringify;

async function stepTime(options: object) {
  const t = new addon.Trainer(json(MLP_SPEC), json({ seed: 1 }));
  t.setData('train', blobs(256, 2));
  const r = (await t.train(json({ batchSize: 16, ...options }))) as { steps: number; stepTime: { warmupSteps: number; steadyStateMeanMs: number | null } };
  return { steps: r.steps, ...r.stepTime };
}

describe('the warmupSteps training option', () => {
  it('sets how many steps run before the steady-state clock starts', async () => {
    const t = await stepTime({ maxSteps: 12, warmupSteps: 7 });
    expect(t.steps).toBe(12);
    expect(t.warmupSteps).toBe(7);
    expect(t.steadyStateMeanMs).toBeGreaterThan(0);
  });

  it('may be 0 (every step measured) or the whole run (no steady state)', async () => {
    expect((await stepTime({ maxSteps: 4, warmupSteps: 0 })).warmupSteps).toBe(0);
    const all = await stepTime({ maxSteps: 4, warmupSteps: 10 });
    expect(all.warmupSteps).toBe(4);
    expect(all.steadyStateMeanMs).toBeNull();
  });

  it('keeps the short default warm-up when absent: min(5, total steps / 10)', async () => {
    expect((await stepTime({ maxSteps: 12 })).warmupSteps).toBe(1);
    expect((await stepTime({ epochs: 5 })).warmupSteps).toBe(5);
  });

  it('is refused, naming the value, when negative or fractional', () => {
    const t = new addon.Trainer(json(MLP_SPEC), json({ seed: 1 }));
    t.setData('train', blobs(64, 2));
    for (const bad of [-2, 1.5]) {
      const err = thrown(() => t.train(json({ warmupSteps: bad })));
      expect(err.code).toBe('E_BAD_INPUT');
      expect(err.message).toContain(`options.warmupSteps must be an integer`);
      expect(err.message).toContain(String(bad));
    }
  });
});
