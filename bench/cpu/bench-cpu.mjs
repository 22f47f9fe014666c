#!/usr/bin/env node
// CPU benchmark: the engine's GEMM against this machine's measured peak, and
// training throughput of the built-in models at batch 256 on synthetic data.
//   npm run bench:cpu [-- --threads N] [-- --quick] [-- --out FILE | --save]
// Prints a table; writes JSON only to --out FILE, or with --save to
// bench/results/cpu-<host>.json.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { argValue, benchOutput, REPO_ROOT } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const addon = require(path.join(REPO_ROOT, 'build', 'Release', 'trainbench_native.node'));

const args = process.argv.slice(2);
const output = benchOutput(args);
const quick = args.includes('--quick');
const threads = Number(argValue(args, '--threads', '0'));
if (!Number.isInteger(threads) || threads < 0) {
  console.error(`bench-cpu: --threads must be an integer >= 0 (0 = all cores), got ${JSON.stringify(argValue(args, '--threads'))}`);
  process.exit(2);
}

/** Vendor, family and clock from /proc/cpuinfo (Linux); the clock a VM reports may be nominal. */
function cpuFacts() {
  const facts = { vendor: 'unknown', family: null, model: null, mhz: os.cpus()[0]?.speed ?? null, source: 'os.cpus()' };
  try {
    const text = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (k) => new RegExp(`^${k}\\s*:\\s*(.+)$`, 'm').exec(text)?.[1];
    facts.vendor = field('vendor_id') ?? facts.vendor;
    facts.family = Number(field('cpu family'));
    facts.model = Number(field('model'));
    facts.mhz = Number(field('cpu MHz')) || facts.mhz;
    facts.source = '/proc/cpuinfo';
  } catch {
    // not Linux: os.cpus() speed only
  }
  return facts;
}

/**
 * FP32 FLOPs per cycle per core of an ISA's FMAs, used only to turn the
 * measured peak into an implied clock (a sanity check) and for the nominal
 * fallback. AVX-512 on Zen 4 (AMD family 25) runs on two 256-bit FMA pipes
 * (32 FLOP/cycle); Zen 5 and Intel server cores have two 512-bit FMA units
 * (64; Intel parts with one unit imply half the clock); AVX2+FMA cores have
 * two 256-bit FMA units (32); plain SSE is counted as 8.
 */
function flopsPerCycle(isa, cpu) {
  if (isa === 'avx512') return cpu.vendor === 'AuthenticAMD' && cpu.family === 25 ? 32 : 64;
  if (isa === 'avx2') return 32;
  return 8;
}

// An implied all-core clock above this is a measurement gone wrong (the old
// dependent-add count said 8.24 GHz on a 2.3 GHz CPU), not a fast CPU.
const MAX_PLAUSIBLE_GHZ = 6;
const MIN_PLAUSIBLE_GHZ = 0.3;
// FMA latency in cycles on Zen 4 and Intel cores since Skylake; only for the second sanity figure.
const FMA_LATENCY_CYCLES = 4;

const cpu = cpuFacts();
const cores = threads > 0 ? threads : os.cpus().length;
const probe = addon.benchGemm(64, 64, 64, 1, cores);

/**
 * The peak FP32 rate the GEMM is compared with: measured with independent FMA
 * chains of the widest vector on every core at once (a real upper bound), or,
 * when that is unavailable or implies an implausible clock, the nominal clock
 * x FLOP/cycle. `source` says which was used.
 */
function peakRate() {
  const nominalGhz = cpu.mhz / 1000;
  const measured = addon.measurePeak(cores);
  const isa = measured?.isa ?? probe.kernel;
  const perCycle = flopsPerCycle(isa, cpu);
  const nominal = {
    gflops: cores * perCycle * nominalGhz,
    ghz: nominalGhz,
    how: `${cores} cores x ${perCycle} FP32 FLOP/cycle (${isa}, ${cpu.vendor} family ${cpu.family}) x ${nominalGhz.toFixed(2)} GHz nominal (${cpu.source})`,
  };
  if (!measured) return { ...nominal, source: 'nominal clock', why: 'no FMA measurement for this CPU (x86-64 with AVX2+FMA or AVX-512 only)' };
  const impliedGhz = measured.gflops / (cores * perCycle);
  const perThreadFma = measured.gflops / measured.threads / (2 * measured.lanes) * 1e9;
  const sanity = {
    measuredGflops: measured.gflops,
    perThreadGflops: measured.perThreadGflops,
    impliedGhz,
    latencyImpliedGhz: (measured.dependentFmaPerSec * FMA_LATENCY_CYCLES) / 1e9,
    // latency x FMA ports when the independent chains saturate the ports (8 on two ports of latency 4)
    independentOverDependent: perThreadFma / measured.dependentFmaPerSec,
    isa: measured.isa,
    chains: measured.chains,
  };
  if (impliedGhz > MAX_PLAUSIBLE_GHZ || impliedGhz < MIN_PLAUSIBLE_GHZ) {
    return { ...nominal, source: 'nominal clock', why: `the measured ${measured.gflops.toFixed(0)} GFLOP/s implies ${impliedGhz.toFixed(2)} GHz, which is implausible`, measurement: sanity };
  }
  return {
    gflops: measured.gflops,
    ghz: impliedGhz,
    how: `measured: ${measured.chains} independent ${measured.isa} FMA chains on each of ${measured.threads} threads at once, best of 5, each timed by its own CPU time (implies ${impliedGhz.toFixed(2)} GHz at ${perCycle} FLOP/cycle; ${cpu.source} says ${cpu.mhz} MHz)`,
    source: 'measured',
    measurement: sanity,
  };
}

const peak = peakRate();
const peakGflops = peak.gflops;

const gemmSizes = quick
  ? [[256, 256, 256], [512, 512, 512]]
  : [[256, 256, 256], [512, 512, 512], [1024, 1024, 1024], [2048, 2048, 2048], [64, 50176, 288], [256, 1496, 128]];
const gemm = gemmSizes.map(([M, N, K]) => {
  const r = addon.benchGemm(M, N, K, quick ? 3 : 7, cores);
  const gflops = (2 * M * N * K) / r.seconds / 1e9;
  return { M, N, K, seconds: r.seconds, gflops, efficiency: gflops / peakGflops };
});

// Synthetic data with the models' real shapes: throughput does not depend on the values.
function synthetic(spec, n) {
  const rnd = (() => {
    let s = 1;
    return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  })();
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

const models = {
  mlp: { family: 'mlp', task: 'classification', input: [1, 28, 28], outputs: 10, hidden: [256, 128], dropout: 0 },
  cnn: { family: 'cnn', task: 'classification', input: [1, 28, 28], outputs: 10, channels: [32, 64, 64], strides: [1, 2, 2], kernel: 3, batchNorm: true, hidden: 128, dropout: 0 },
  bottleneck_resnet: { family: 'bottleneck_resnet', input: [104, 9, 9], stemWidth: 24, layers: [2, 2, 2, 1], strides: [1, 2, 2, 2], widths: [24, 48, 96, 144], expansion: 4, headChannels: 128, policyClasses: 1496 },
};
const BATCH = 256;
const training = [];
for (const [name, spec] of Object.entries(models)) {
  const steps = quick ? 6 : name === 'bottleneck_resnet' ? 15 : 40;
  const t = new addon.Trainer(JSON.stringify(spec), JSON.stringify({ seed: 1, threads }));
  t.setData('train', synthetic(spec, BATCH * steps));
  const r = await t.train(JSON.stringify({ batchSize: BATCH, maxSteps: steps, optimizer: { kind: 'sgd', lr: 0.01 } }));
  const info = t.info();
  const stepMs = r.stepTime.steadyStateMeanMs ?? r.stepTime.wallClockMeanMs;
  const samplesPerSec = (1000 * BATCH) / stepMs;
  training.push({
    model: name,
    params: info.params,
    forwardFlopsPerSample: info.flopsPerSample,
    batch: BATCH,
    steps,
    steadyStateStepMs: r.stepTime.steadyStateMeanMs,
    wallClockStepMs: r.stepTime.wallClockMeanMs,
    samplesPerSec,
    // forward + backward counted as 3x the forward FLOPs
    trainGflops: (3 * info.flopsPerSample * samplesPerSec) / 1e9,
    phasesMs: r.phasesMs,
  });
}

const result = {
  benchmark: 'cpu',
  date: new Date().toISOString(),
  host: { hostname: os.hostname(), cpuModel: os.cpus()[0]?.model, cores, ...cpu },
  gemmKernel: probe.kernel,
  peak,
  gemm,
  training,
  notes: [
    'GEMM: best of several runs by the wall clock, C = A . B, all float32, row-major.',
    'Peak: FMA chains timed by each thread\'s CPU time, so other processes do not lower it; the GEMM is timed by the wall clock, so on a busy machine its share of the peak is understated.',
    'Training: steady-state step time (first steps excluded), synthetic data with the real shapes, SGD.',
    'trainGflops counts forward + backward as 3x the forward FLOPs.',
  ],
};

const f1 = (x) => x.toFixed(1);
console.log(`CPU: ${result.host.cpuModel}, ${cores} threads, GEMM kernel ${probe.kernel}`);
console.log(`peak: ${f1(peakGflops)} GFLOP/s, ${peak.how}`);
if (peak.why) console.log(`      (nominal clock used: ${peak.why})`);
if (peak.measurement) {
  const m = peak.measurement;
  console.log(
    `      sanity: one dependent FMA chain per thread implies ${m.latencyImpliedGhz.toFixed(2)} GHz at ${FMA_LATENCY_CYCLES}-cycle latency; independent/dependent = ${m.independentOverDependent.toFixed(1)} (latency x FMA ports)`,
  );
}
console.log('');
console.log('GEMM            M      N      K   GFLOP/s   of peak');
for (const g of gemm) console.log(`            ${String(g.M).padStart(5)}  ${String(g.N).padStart(5)}  ${String(g.K).padStart(5)}  ${f1(g.gflops).padStart(8)}  ${(100 * g.efficiency).toFixed(0).padStart(7)}%`);
console.log('\ntraining (batch 256)   params   samples/s   step ms (steady / wall)   GFLOP/s');
for (const t of training) {
  console.log(
    `${t.model.padEnd(20)} ${String(t.params).padStart(8)}  ${f1(t.samplesPerSec).padStart(10)}   ${f1(t.steadyStateStepMs ?? NaN).padStart(8)} / ${f1(t.wallClockStepMs).padEnd(8)}      ${f1(t.trainGflops).padStart(6)}`,
  );
}
output.write(`cpu-${os.hostname()}`, result);
