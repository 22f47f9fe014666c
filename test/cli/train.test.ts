// `trainbench train` end to end on Fashion-MNIST (Debian's dataset-fashion-mnist):
// the accuracy targets of the CPU engine, measured through the whole stack.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isEngineTrainRun, TrainRunResultSchema } from '../../src-main/api/train-result';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

async function train(...args: string[]) {
  const { stdout } = await run(process.execPath, [CLI, 'train', '--json', '--workspace', ws.dir, ...args], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
  const result = TrainRunResultSchema.parse(lines.find((l) => l.type === 'result'));
  if (!isEngineTrainRun(result)) throw new Error('not an engine run');
  return { result, lines };
}

describe('trainbench train on Fashion-MNIST (CPU)', () => {
  it('the built-in MLP reaches at least 85% test accuracy in one epoch', async () => {
    const { result, lines } = await train('--model', 'mlp', '--epochs', '1');
    const acc = result.target.test?.accuracy ?? 0;
    console.log(`Fashion-MNIST MLP, 1 epoch: test accuracy ${(100 * acc).toFixed(2)}%, ${result.seconds.toFixed(1)} s, ${Math.round(result.samplesPerSec)} samples/s`);
    expect(acc).toBeGreaterThanOrEqual(0.85);
    expect(lines.filter((l) => l.type === 'epoch')).toHaveLength(1);
  }, 120_000);

  it('the built-in CNN reaches at least 89% test accuracy in one epoch', async () => {
    const { result } = await train('--model', 'cnn', '--epochs', '1');
    const acc = result.target.test?.accuracy ?? 0;
    console.log(`Fashion-MNIST CNN, 1 epoch: test accuracy ${(100 * acc).toFixed(2)}%, ${result.seconds.toFixed(1)} s, ${Math.round(result.samplesPerSec)} samples/s`);
    expect(acc).toBeGreaterThanOrEqual(0.89);
  }, 600_000);
});

describe('trainbench train progress before the first step', () => {
  it('says what it prepares and shows the dataset cache build (on a pipe: one line per stage)', async () => {
    const fresh = tempDir();
    try {
      const { stderr } = await run(process.execPath, [CLI, 'train', '--model', 'mlp', '--max-steps', '2', '--workspace', fresh.dir]);
      const lines = stderr.trim().split('\n');
      expect(lines[0]).toBe('preparing the data (the first run caches it)...');
      expect(lines).toContain('dataset cached: 60,000 records, 47 MB');
      expect(lines).toContain('dataset cached: 10,000 records, 8 MB');
      expect(lines.some((l) => /^caching dataset +\d+% [\d,]+\/60,000 records \d+ MB\/s/.test(l))).toBe(true);
      // The build comes before training, and nothing is drawn for a terminal on a pipe.
      expect(lines.findIndex((l) => l.startsWith('dataset cached'))).toBeLessThan(lines.findIndex((l) => l.startsWith('epoch 1/1')));
      expect(stderr).not.toContain('\x1b[');
    } finally {
      fresh.cleanup();
    }
  }, 120_000);
});

describe('trainbench train refuses bad input clearly', () => {
  const fails = async (...args: string[]) => {
    try {
      await run(process.execPath, [CLI, 'train', '--workspace', ws.dir, ...args]);
    } catch (err) {
      return (err as { stderr: string }).stderr;
    }
    throw new Error('expected the command to fail');
  };

  it('an unknown model', async () => {
    expect(await fails('--model', 'resnet50')).toMatch(/--model "resnet50" is neither a built-in model \(mlp, cnn, bottleneck_resnet\)/);
  });

  it('a model whose classes do not cover the labels', async () => {
    const spec = `${ws.dir}/five.json`;
    writeFileSync(spec, JSON.stringify({ family: 'mlp', input: [1, 28, 28], outputs: 5 }));
    expect(await fails('--model', spec, '--max-steps', '1')).toMatch(/trainbench: train label \d at record \d+ is outside \[0, 5\)/);
  });

  it('a bad option value', async () => {
    expect(await fails('--batch-size', 'many')).toContain('--batch-size must be an integer >= 1, got "many"');
    expect(await fails('--optimizer', 'lion', '--max-steps', '1')).toContain('--optimizer must be one of sgd, adamw, got "lion"');
    expect(await fails('--precision', 'fp8', '--max-steps', '1')).toContain('--precision must be one of fp32, bf16, fp16, got "fp8"');
    expect(await fails('--precision', 'bf16', '--device', 'cpu', '--max-steps', '1')).toContain("precision 'bf16' needs a CUDA device");
  });

  it('missing data files', async () => {
    expect(await fails('--data', '/nope/a,/nope/b')).toMatch(/trainbench: cannot read \/nope\/[ab]: it does not exist; check the path/);
  });
});
