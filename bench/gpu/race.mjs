#!/usr/bin/env node
// The race: the engine against PyTorch on the same GPU, the same board network,
// the same cached data, at batch 750 and 2,048, in one call. PyTorch's side is
// what a skilled user writes (bench/pytorch/train_torch.py): channels_last, AMP
// bf16, fused SGD, cudnn.benchmark, eager, and the whole step under
// torch.compile(mode="max-autotune") with a report of whether its CUDA graphs
// were used. Then GEMM throughput of the engine's kernels against cuBLASLt and
// the device's theoretical peak. With --census, each PyTorch row also profiles
// 20 more steps (kernel-busy time against wall time, top kernels, launches).
// Prints tables; writes JSON only to --out FILE or, with --save, to
// bench/results/gpu-race-<gpu>.json.
//   npm run bench:gpu [-- --steps N] [-- --records N] [-- --batches 750,2048] [-- --workspace DIR]
//     [-- --skip-torch] [-- --torch-compile-mode MODE] [-- --torch-timeout S] [-- --census] [-- --out FILE | --save]
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { benchOutput, REPO_ROOT as root, tempFolder } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const output = benchOutput(args);
const arg = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const STEPS = Number(arg('--steps', '200'));
const RECORDS = Number(arg('--records', '30000'));
const BATCHES = arg('--batches', '750,2048').split(',').map(Number);
if (!BATCHES.every((b) => Number.isInteger(b) && b > 0)) {
  console.error(`--batches takes positive integers separated by commas, got ${arg('--batches')}`);
  process.exit(2);
}
const BATCH = BATCHES[0]; // the measurement-mode run and the ADR's figures
const COMPILE_MODE = arg('--torch-compile-mode', 'max-autotune');
// One PyTorch row may not take the race down: max-autotune's tuning is the slowest part, so a row past this
// limit is recorded as such and the race goes on.
const TORCH_TIMEOUT_S = Number(arg('--torch-timeout', '240'));
const CENSUS_STEPS = args.includes('--census') ? 20 : 0;
const python = arg('--python', 'python3');

// cuBLASLt from PyTorch's wheel when it is not on the loader's path.
if (!process.env.TB_CUBLASLT) {
  try {
    const found = execFileSync(python, ['-c', 'import glob,os,nvidia.cublas as c;p=glob.glob(os.path.join(list(c.__path__)[0],"lib","libcublasLt.so*"));print(p[0] if p else "")'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (found) process.env.TB_CUBLASLT = found;
  } catch {
    // no Python package: the engine's own kernels, and the result says so
  }
}

const addon = require(path.join(root, 'build', 'Release', 'trainbench_native.node'));
const dist = (p) => require(path.join(root, 'dist', 'src-main', p));
const { openWorkspace } = dist('core/workspace/workspace.js');
const { writeBoardDumps } = dist('core/datasets/example-board.js');
const { buildCache } = dist('core/datasets/cache-builder.js');
const { openSource } = dist('core/datasets/importers/open-source.js');
const { ModelSpecSchema } = dist('api/model-spec.js');

const devices = addon.devices();
if (!devices.cuda.available) {
  console.error(`bench:gpu needs a CUDA device: ${devices.cuda.reason}`);
  process.exit(1);
}
const smi = (q) => execFileSync('nvidia-smi', [`--query-gpu=${q}`, '--format=csv,noheader'], { encoding: 'utf8' }).trim().split('\n')[0];
const gpu = { name: smi('name'), driver: smi('driver_version'), memory: smi('memory.total') };

// ---- data: the board dataset, cached once, read by both sides
// A temporary workspace, removed at exit (also on Ctrl-C), unless --workspace names one to keep.
const ws = await openWorkspace(arg('--workspace', undefined) ?? tempFolder('trainbench-bench-gpu-'));
const source = await writeBoardDumps(ws, RECORDS, 0);
const built = await buildCache(ws, await openSource(source), { name: 'race-board', shardBytes: 256 << 20, fieldMap: [] }, { jobId: 'race', spec: source });
const cacheDir = path.join(ws.root, 'datasets', built.dataset.id);
const xStats = built.dataset.fields.find((f) => f.name === 'x')?.stats;
const normalize = xStats && xStats.std > 0 ? { x: { scale: 1 / xStats.std, offset: -xStats.mean / xStats.std } } : {};
const spec = ModelSpecSchema.parse({ family: 'bottleneck_resnet' });
const sgd = { kind: 'sgd', lr: 0.01, momentum: 0.9, weightDecay: 1e-4 };

async function ours(label, batch, extra) {
  const t = new addon.Trainer(JSON.stringify(spec), JSON.stringify({ seed: 0 }));
  t.setSource('train', JSON.stringify({ kind: 'cache', dir: cacheDir }), JSON.stringify(normalize));
  const steps = STEPS + 10;
  const r = await t.train(
    JSON.stringify({ batchSize: batch, maxSteps: steps, epochs: 1000, device: 'cuda:0', precision: 'bf16', loaderWorkers: 4, prefetch: 4, optimizer: sgd, ...extra }),
  );
  const stepMs = r.stepTime.steadyStateMeanMs;
  return { label, batch, samplesPerSec: (batch / stepMs) * 1000, stepMs, phasesMs: r.phasesMs, backend: r.backend, memory: r.memory, steps: r.steps };
}

function theirs(mode, batch) {
  const label = mode === 'compile' ? `PyTorch compile ${COMPILE_MODE}, whole step (AMP bf16)` : `PyTorch eager (AMP bf16)`;
  const argv = [path.join(root, 'bench', 'pytorch', 'train_torch.py'), '--cache', cacheDir, '--spec', JSON.stringify(spec), '--batch', String(batch),
    '--steps', String(STEPS), '--warmup', '30', '--mode', mode, '--compile-mode', COMPILE_MODE, '--precision', 'bf16', '--optimizer', 'sgd',
    '--lr', String(sgd.lr), '--momentum', String(sgd.momentum), '--weight-decay', String(sgd.weightDecay), '--census-steps', String(CENSUS_STEPS)];
  try {
    const out = execFileSync(python, argv, { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'], timeout: TORCH_TIMEOUT_S * 1000, killSignal: 'SIGKILL' });
    return { label, ...JSON.parse(out.trim().split('\n').at(-1)) };
  } catch (err) {
    const why = err.signal ? `stopped at the ${TORCH_TIMEOUT_S} s limit (--torch-timeout)` : `exited with ${err.status}`;
    console.error(`${label}, batch ${batch}: ${why}`);
    return { label, mode, batch, error: why, samplesPerSec: null, stepMs: null, phasesMs: {} };
  }
}

const rows = [];
for (const batch of BATCHES) {
  rows.push(await ours('trainbench bf16', batch, {}), await ours('trainbench bf16 + CUDA graph', batch, { cudaGraph: true }));
}
// Where our step's time goes, by op: measurement mode times every node (slower, so not a race row).
const profiled = await ours('trainbench bf16, measurement mode', BATCH, { phaseTiming: 'measure' });
const torchRows = [];
if (!args.includes('--skip-torch')) for (const batch of BATCHES) for (const mode of ['eager', 'compile']) torchRows.push(theirs(mode, batch));

// ---- kernel level: the board net's GEMM shapes, forward and backward, and a large square one.
// Backward of C[M,N] = W[M,K] X[K,N]: the weight gradient is [M,K] over the long N (batch x
// pixels: few output tiles, so it needs split-K), the input gradient [K,N] over M.
// First stage at 9x9 (stem 104 -> 24 planes 3x3; bottleneck 24 -> 24 1x1, 24 -> 24 3x3, 24 -> 96
// 1x1; the next block's 96 -> 24 1x1) and the policy head.
const P = 750 * 81;
const forward = [[24, P, 936], [24, P, 24], [24, P, 216], [96, P, 24], [24, P, 96], [1496, 750, 128]];
const shapes = [
  ...forward.map(([M, N, K]) => ({ pass: 'forward', M, N, K })),
  ...forward.map(([M, N, K]) => ({ pass: 'weight grad', M, N: K, K: N })),
  ...forward.map(([M, N, K]) => ({ pass: 'input grad', M: K, N, K: M })),
  { pass: 'reference', M: 4096, N: 4096, K: 4096 },
];
const gemms = [];
for (const { pass, M, N, K } of shapes) {
  for (const precision of ['bf16', 'fp32']) gemms.push({ pass, ...addon.benchGemmCuda(M, N, K, precision, 20) });
}

const fmt = (x, d = 0) => (x == null ? 'n/a' : Number(x).toFixed(d));
const graphsOf = (r) => (r.cudaGraphs ? (r.cudaGraphs.used ? `used (${r.cudaGraphs.graphs})` : 'not used') : r.error ? r.error : '');
console.log(`\n${gpu.name}, driver ${gpu.driver}; board network, batches ${BATCHES.join(', ')}, ${STEPS} timed steps`);
console.log('| run | batch | samples/s | step ms | data | h2d | forward | loss | backward | optimizer | CUDA graphs |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const r of [...rows, ...torchRows]) {
  const p = r.phasesMs ?? {};
  const graphs = r.backend ? r.backend.cudaGraph ?? '' : graphsOf(r);
  console.log(`| ${r.label} | ${r.batch} | ${fmt(r.samplesPerSec)} | ${fmt(r.stepMs, 2)} | ${fmt(p.data, 2)} | ${fmt(p.h2d, 2)} | ${fmt(p.forward, 2)} | ${fmt(p.loss, 2)} | ${fmt(p.backward, 2)} | ${fmt(p.optimizer, 2)} | ${graphs} |`);
}
for (const r of torchRows.filter((t) => t.cudaGraphs?.skipped && t.mode === 'compile')) console.log(`${r.label}, batch ${r.batch}: CUDA graphs skipped: ${r.cudaGraphs.skipped}`);
// Per batch: the engine's best row against each PyTorch row at the same batch.
const ratios = {};
for (const batch of BATCHES) {
  const best = Math.max(...rows.filter((r) => r.batch === batch).map((r) => r.samplesPerSec));
  for (const t of torchRows.filter((r) => r.batch === batch && r.samplesPerSec)) ratios[`${t.label}, batch ${batch}`] = best / t.samplesPerSec;
}
for (const [label, ratio] of Object.entries(ratios)) console.log(`trainbench / ${label}: ${ratio.toFixed(2)}x`);
const launchesAt = (batch) => rows.find((r) => r.batch === batch && r.backend.launchesPerStep)?.backend.launchesPerStep ?? null;
const launches = launchesAt(BATCH);
console.log(
  launches
    ? `\nlaunches per step (counted in the captured graph): ${launches.total} (${launches.kernels} kernels, ${launches.copies} copies, ${launches.memsets} memsets)`
    : '\nlaunches per step: not counted (the CUDA graph was not captured)',
);
const census = torchRows.filter((t) => t.census).map((t) => ({ label: t.label, batch: t.batch, ...t.census }));
for (const c of census) {
  if (c.error) {
    console.log(`\ncensus of ${c.label}, batch ${c.batch}: ${c.error}`);
    continue;
  }
  console.log(`\ncensus of ${c.label}, batch ${c.batch}: kernels busy ${fmt(c.kernelBusyMsPerStep, 2)} of ${fmt(c.stepMs, 2)} ms per step (${fmt(100 * c.kernelBusyShare, 0)}%);` +
    ` device ${fmt(c.devicePerStep.kernel)} kernels, ${fmt(c.devicePerStep.copy)} copies, ${fmt(c.devicePerStep.memset)} memsets;` +
    ` host ${fmt(c.hostLaunchesPerStep.kernelLaunches)} kernel launches, ${fmt(c.hostLaunchesPerStep.graphLaunches)} graph launches per step`);
  for (const k of c.topKernels) console.log(`  ${fmt(k.msPerStep, 3).padStart(7)} ms ${(100 * k.share).toFixed(1).padStart(5)}%  x${fmt(k.callsPerStep, 1)}  ${k.name.slice(0, 100)}`);
}
console.log(`\nlargest ops of our step (measurement mode, batch ${BATCH}, ${fmt(profiled.stepMs, 2)} ms/step):`);
for (const o of (profiled.backend.opShares ?? []).slice(0, 8)) console.log(`  ${o.op.padEnd(28)} ${(100 * o.share).toFixed(1)}%`);
// The own kernel as the engine runs it (split-K slices where its tiles leave SMs idle) beside the same kernel unsplit.
console.log('\n| GEMM | pass | precision | own TFLOP/s | K slices | own unsplit | cuBLASLt TFLOP/s | theoretical |');
console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |');
for (const g of gemms) {
  console.log(`| ${g.shape} | ${g.pass} | ${g.precision} | ${fmt(g.ownTflops, 1)} | ${g.ownSlices ?? 1} | ${fmt(g.ownUnsplitTflops, 1)} | ${fmt(g.cublasLtTflops, 1)} | ${fmt(g.theoreticalTflops, 0)} |`);
}

const result = {
  benchmark: 'gpu-race',
  date: new Date().toISOString(),
  gpu,
  host: { cpuModel: os.cpus()[0]?.model, cores: os.cpus().length },
  dataset: { records: RECORDS, id: built.dataset.id },
  model: 'bottleneck_resnet (default sizes)',
  batch: BATCH,
  batches: BATCHES,
  timedSteps: STEPS,
  trainbench: rows,
  launchesPerStep: launches,
  launchesPerStepByBatch: Object.fromEntries(BATCHES.map((b) => [b, launchesAt(b)])),
  opShares: profiled.backend.opShares,
  measurementMode: { stepMs: profiled.stepMs, phasesMs: profiled.phasesMs },
  pytorch: torchRows,
  ratios,
  census: {
    pytorch: census,
    engine: {
      launchesPerStep: launches,
      note: "the engine counts its launches only in the captured CUDA graph (backend.launchesPerStep); it has no kernel timer of its own, so its kernel-busy time and top kernels need ncu or nsys",
    },
  },
  gemm: gemms,
  cublasLt: addon.cublasLt(),
  notes: [
    'samples/s: trainbench from its steady-state step time (first 5 steps excluded); PyTorch over the timed steps after 30 warm-up steps (torch.compile compiles and autotunes during warm-up: compile.warmupSeconds).',
    'Phases: trainbench with CUDA events in default mode (with a CUDA graph the whole step is timed under forward); PyTorch eager with CUDA events around the same boundaries, PyTorch compile with the whole compiled step under forward; data is host time waiting for the loader.',
    'PyTorch compile: cudaGraphs.used says whether inductor recorded CUDA graphs; cudaGraphs.skipped gives every reason it logged for running a graph without one.',
    'census (with --census): 20 more steps of each PyTorch row under torch.profiler; kernelBusyShare is the union of kernel intervals over the step time measured without the profiler.',
    'cuBLASLt TFLOP/s have operands already in bf16; the engine converts fp32 activations when it picks cuBLASLt, and that cost is in its per-shape choice.',
  ],
};
output.write(`gpu-race-${gpu.name.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`, result);
