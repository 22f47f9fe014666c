#!/usr/bin/env node
// A/B of two builds of the native addon on the CPU: the same model, batch and
// synthetic data, runs alternating A/B/B/A... in one process so machine drift
// (other load, clocks) hits both. Prints each build's median samples/s and the
// B/A ratio per round with its spread, and the same for process CPU time per
// sample (user + system, warm-up included): on a machine shared with other
// jobs wall time swings with their load, the work a step costs much less.
//   node bench/cpu/ab-addon.mjs --a OLD.node --b NEW.node [--model cnn|bottleneck_resnet|mlp] [--rounds N] [--steps N] [--threads N]
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { argValue, numberArg } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const fileA = argValue(args, '--a', undefined);
const fileB = argValue(args, '--b', undefined);
if (!fileA || !fileB) {
  process.stderr.write('ab-addon: --a and --b name the two trainbench_native.node builds to compare\n');
  process.exit(2);
}
const model = argValue(args, '--model', 'bottleneck_resnet');
const ROUNDS = numberArg(args, '--rounds', 4);
const THREADS = numberArg(args, '--threads', os.cpus().length);
const BATCH = 256;

const specs = {
  mlp: { family: 'mlp', task: 'classification', input: [1, 28, 28], outputs: 10, hidden: [256, 128], dropout: 0 },
  cnn: { family: 'cnn', task: 'classification', input: [1, 28, 28], outputs: 10, channels: [32, 64, 64], strides: [1, 2, 2], kernel: 3, batchNorm: true, hidden: 128, dropout: 0 },
  bottleneck_resnet: { family: 'bottleneck_resnet', input: [104, 9, 9], stemWidth: 24, layers: [2, 2, 2, 1], strides: [1, 2, 2, 2], widths: [24, 48, 96, 144], expansion: 4, headChannels: 128, policyClasses: 1496 },
};
const spec = specs[model];
if (!spec) {
  process.stderr.write(`ab-addon: --model must be one of ${Object.keys(specs).join(', ')}, got ${JSON.stringify(model)}\n`);
  process.exit(2);
}
const STEPS = numberArg(args, '--steps', { mlp: 200, cnn: 30, bottleneck_resnet: 16 }[model]);

// Fixed-seed synthetic data with the real shapes (the loader is not what is compared).
function synthetic(n) {
  let s = 1;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  if (spec.family === 'bottleneck_resnet') {
    const policy = new Float32Array(n * 1496);
    for (let i = 0; i < n; i++) policy[i * 1496 + Math.floor(rnd() * 1496)] = 1;
    return {
      x: { dtype: 'uint8', shape: [104, 9, 9], data: new Uint8Array(n * 104 * 81).map(() => (rnd() < 0.3 ? 1 : 0)) },
      policy: { dtype: 'float32', shape: [1496], data: policy },
      value: { dtype: 'float32', shape: [], data: new Float32Array(n).map(() => (rnd() < 0.5 ? 1 : 0)) },
    };
  }
  return {
    x: { dtype: 'uint8', shape: [1, 28, 28], data: new Uint8Array(n * 784).map(() => Math.floor(rnd() * 256)), scale: 1 / 255 },
    y: { dtype: 'uint8', shape: [], data: new Uint8Array(n).map(() => Math.floor(rnd() * 10)) },
  };
}
const data = synthetic(BATCH * 8);
const addons = { A: require(path.resolve(fileA)), B: require(path.resolve(fileB)) };

async function run(which) {
  const t = new addons[which].Trainer(JSON.stringify(spec), JSON.stringify({ seed: 1, threads: THREADS }));
  t.setData('train', data);
  const cpu0 = process.cpuUsage();
  const r = await t.train(JSON.stringify({ batchSize: BATCH, maxSteps: STEPS + 3, epochs: 1000, warmupSteps: 3, optimizer: { kind: 'sgd', lr: 0.01, momentum: 0.9 } }));
  const cpu = process.cpuUsage(cpu0);
  return { samplesPerSec: (BATCH / r.stepTime.steadyStateMeanMs) * 1000, cpuUsPerSample: (cpu.user + cpu.system) / (BATCH * r.steps), phasesMs: r.phasesMs };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const res = { A: [], B: [] };
const ratios = [];
const cpuRatios = [];
for (let i = 0; i < ROUNDS; i++) {
  const order = i % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
  const got = {};
  for (const w of order) got[w] = await run(w);
  res.A.push(got.A.samplesPerSec);
  res.B.push(got.B.samplesPerSec);
  ratios.push(got.B.samplesPerSec / got.A.samplesPerSec);
  cpuRatios.push(got.A.cpuUsPerSample / got.B.cpuUsPerSample);
  console.log(`round ${i + 1}: A ${got.A.samplesPerSec.toFixed(0)}  B ${got.B.samplesPerSec.toFixed(0)} samples/s  B/A ${ratios.at(-1).toFixed(3)}; CPU us/sample A ${got.A.cpuUsPerSample.toFixed(0)}  B ${got.B.cpuUsPerSample.toFixed(0)}  A/B ${cpuRatios.at(-1).toFixed(3)}`);
}
console.log(`${model}, batch ${BATCH}, ${THREADS} threads, load average ${os.loadavg()[0].toFixed(1)}: A ${median(res.A).toFixed(0)}, B ${median(res.B).toFixed(0)} samples/s; B/A median ${median(ratios).toFixed(3)} (min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)})`);
