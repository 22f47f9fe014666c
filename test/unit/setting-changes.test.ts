// What two benchmark runs differ in, as the ADR's attempt tables say it: settings and models in words, and two
// models whose words are the same told apart by their specs.
import { describe, expect, it } from 'vitest';

import { settingChanges } from '../../src-main/core/reports/attempts';
import type { BenchmarkRun } from '../../src-main/core/reports/report-runs';

/** Only what settingChanges reads: the run's config and its data. */
const run = (spec: unknown, options: Record<string, unknown>): BenchmarkRun =>
  ({ record: { config: { spec, options, warmupSteps: 5, steps: 50, repeat: 3 } }, result: { target: { data: 'fashion-mnist-train' } } }) as unknown as BenchmarkRun;

const MLP = { family: 'mlp', task: 'classification', input: [1, 28, 28], outputs: 10, hidden: [256, 128], dropout: 0 };

describe('settingChanges', () => {
  it('says a model change in words', () => {
    const changes = settingChanges(run(MLP, { batchSize: 64 }), run({ ...MLP, hidden: [512] }, { batchSize: 64 }));
    expect(changes).toEqual([{ setting: 'model', baseline: 'MLP, input 28x28, hidden layers 256-128, 10 classes', attempt: 'MLP, input 28x28, hidden layers 512, 10 classes', protocol: false }]);
  });

  it('tells apart two specs whose words are the same by their JSON, never "X → X"', () => {
    const flat = { ...MLP, input: [28, 28] };
    const [c] = settingChanges(run(MLP, {}), run(flat, {}));
    expect(c.baseline).not.toBe(c.attempt);
    expect(c.baseline).toBe(JSON.stringify(MLP));
    expect(c.attempt).toBe(JSON.stringify(flat));
  });
});
