// Fashion-MNIST on cuda:0 through the whole stack: the CNN must reach the
// accuracy it reaches on the CPU (test/cli/train.test.ts), in fp32 and bf16.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isEngineTrainRun, TrainRunResultSchema } from '../../src-main/api/train-result';
import { DEBIAN_FASHION_MNIST_DIR } from '../../src-main/core/datasets/fashion-mnist';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { EMULATED, gpuAvailable } from './gpu-gate';

const run = promisify(execFile);
const gpu = gpuAvailable('GPU Fashion-MNIST test');
const dataDir = process.env.TRAINBENCH_FASHION_MNIST ?? DEBIAN_FASHION_MNIST_DIR;
const haveData = existsSync(path.join(dataDir, 'train-images-idx3-ubyte.gz'));
// The dataset is not the device: its absence skips (and says so) even under TB_REQUIRE_GPU=1.
if (gpu && !haveData) console.log(`GPU Fashion-MNIST test skipped: no Fashion-MNIST in ${dataDir} (tools/device/bundle.sh --fashion-mnist carries it)`);
if (gpu && EMULATED) console.log('GPU Fashion-MNIST test skipped on the emulated device: a whole epoch of 60,000 images needs a GPU\'s speed (the accuracy is checked on a real GPU)');
const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe.skipIf(!gpu || !haveData || EMULATED)('trainbench train on Fashion-MNIST (cuda:0)', () => {
  it.each(['fp32', 'bf16'])('the built-in CNN reaches at least 89%% test accuracy in one epoch (%s)', async (precision) => {
    const { stdout } = await run(
      process.execPath,
      [CLI, 'train', '--json', '--workspace', ws.dir, '--model', 'cnn', '--epochs', '1', '--device', 'cuda:0', '--precision', precision],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    const result = TrainRunResultSchema.parse(lines.find((l) => l.type === 'result'));
    if (!isEngineTrainRun(result)) throw new Error('not an engine run');
    const acc = result.target.test?.accuracy ?? 0;
    console.log(`Fashion-MNIST CNN on ${result.target.backend?.device} (${precision}), 1 epoch: test accuracy ${(100 * acc).toFixed(2)}%, ${result.seconds.toFixed(1)} s, ${Math.round(result.samplesPerSec)} samples/s`);
    expect(result.target.memory.device).toBe('cuda:0');
    expect(acc).toBeGreaterThanOrEqual(0.89);
  }, 300_000);
});
