#!/usr/bin/env node
// The CPU race: the engine against PyTorch (bench/pytorch, eager fp32) on the
// same cores, the same cached data and the same batch, for mlp and cnn on
// Fashion-MNIST and bottleneck_resnet on the example board dataset. Runs
// alternate A/B/A/B so drift (turbo, other load) hits both sides; the ratio
// is reported per pair with its spread. PyTorch is first tuned on this machine
// (DataLoader workers, OpenMP wait policy, memory format) and races with its
// best setting, torch.set_num_threads equal to our thread count.
//   npm run bench:cpu-race [-- --pairs N] [-- --models mlp,cnn,bottleneck_resnet] [-- --threads N]
//                          [-- --python PATH] [-- --skip-tune] [-- --addon FILE.node] [-- --baseline OLD.node]
//                          [-- --label NAME] [-- --out FILE | --save]
// --save writes bench/results/cpu-race-<label or host>.json.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { argValue, benchOutput, numberArg, REPO_ROOT as root, tempFolder } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const output = benchOutput(args);
const PAIRS = numberArg(args, '--pairs', 3);
const THREADS = numberArg(args, '--threads', os.cpus().length);
const BATCH = 256;
const MODELS = argValue(args, '--models', 'mlp,cnn,bottleneck_resnet').split(',');
// Timed steps per run, sized so one run takes a few seconds on a 2-core machine.
const STEPS = { mlp: 300, cnn: 30, bottleneck_resnet: 16 };
const WARMUP = { mlp: 20, cnn: 4, bottleneck_resnet: 3 };
for (const m of MODELS) if (!(m in STEPS)) usage(`--models: unknown model ${JSON.stringify(m)} (mlp, cnn, bottleneck_resnet)`);

function usage(message) {
  process.stderr.write(`race: ${message}\n`);
  process.exit(2);
}

// The Python that has torch: --python, else python3 on PATH, else Debian's.
function findPython() {
  const candidates = [argValue(args, '--python', undefined), 'python3', '/usr/bin/python3'].filter(Boolean);
  for (const py of candidates) {
    try {
      const v = execFileSync(py, ['-c', 'import torch;print(torch.__version__)'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      return { python: py, torch: v.trim() };
    } catch {
      // next candidate
    }
  }
  usage(`no Python with torch among ${candidates.join(', ')}: pass --python PATH`);
}
const { python, torch: torchVersion } = findPython();

// --addon races another build (a saved copy of an older one gives the "before" table).
const addonPath = path.resolve(argValue(args, '--addon', path.join(root, 'build', 'Release', 'trainbench_native.node')));
const addon = require(addonPath);
// --baseline adds a third side, an older build, in the same rotation: before and after under the same load.
const baselinePath = argValue(args, '--baseline', undefined);
const baseline = baselinePath ? require(path.resolve(baselinePath)) : null;
const dist = (p) => require(path.join(root, 'dist', 'src-main', p));
const { openWorkspace } = dist('core/workspace/workspace.js');
const { writeBoardDumps } = dist('core/datasets/example-board.js');
const { buildCache } = dist('core/datasets/cache-builder.js');
const { openSource } = dist('core/datasets/importers/open-source.js');
const { fashionMnistDir, fashionMnistSpecs } = dist('core/datasets/fashion-mnist.js');
const { ModelSpecSchema } = dist('api/model-spec.js');

// ---- data: cached once, read by both sides
const ws = await openWorkspace(argValue(args, '--workspace', undefined) ?? tempFolder('trainbench-cpu-race-'));
async function cache(name, source) {
  const built = await buildCache(ws, await openSource(source), { name, shardBytes: 256 << 20, fieldMap: [] }, { jobId: name, spec: source });
  const xStats = built.dataset.fields.find((f) => f.name === 'x')?.stats;
  const normalize = xStats && xStats.std > 0 ? { x: { scale: 1 / xStats.std, offset: -xStats.mean / xStats.std } } : {};
  return { dir: path.join(ws.root, 'datasets', built.dataset.id), normalize, records: built.dataset.records };
}
const needFashion = MODELS.some((m) => m !== 'bottleneck_resnet');
const fashion = needFashion ? await cache('race-fashion', fashionMnistSpecs(fashionMnistDir()).train) : null;
const board = MODELS.includes('bottleneck_resnet') ? await cache('race-board', await writeBoardDumps(ws, 20000, 0)) : null;

const setups = {
  mlp: { spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 }, data: fashion },
  cnn: { spec: { family: 'cnn', input: [1, 28, 28], outputs: 10 }, data: fashion },
  bottleneck_resnet: { spec: { family: 'bottleneck_resnet' }, data: board },
};
const sgd = { kind: 'sgd', lr: 0.01, momentum: 0.9, weightDecay: 1e-4 };

async function ours(model, build = addon) {
  const { spec, data } = setups[model];
  const full = ModelSpecSchema.parse(spec);
  const t = new build.Trainer(JSON.stringify(full), JSON.stringify({ seed: 0, threads: THREADS }));
  t.setSource('train', JSON.stringify({ kind: 'cache', dir: data.dir }), JSON.stringify(data.normalize));
  const steps = STEPS[model] + WARMUP[model];
  const r = await t.train(
    JSON.stringify({ batchSize: BATCH, maxSteps: steps, epochs: 1000, warmupSteps: WARMUP[model], device: 'cpu', loaderWorkers: 1, prefetch: 2, optimizer: sgd }),
  );
  const stepMs = r.stepTime.steadyStateMeanMs;
  return { samplesPerSec: (BATCH / stepMs) * 1000, stepMs, phasesMs: r.phasesMs, threads: r.threads };
}

function theirs(model, { workers, memoryFormat, ompWait }, steps = STEPS[model]) {
  const { spec, data } = setups[model];
  const full = ModelSpecSchema.parse(spec);
  const out = execFileSync(
    python,
    [path.join(root, 'bench', 'pytorch', 'train_torch.py'), '--cache', data.dir, '--spec', JSON.stringify(full), '--batch', String(BATCH),
      '--steps', String(steps), '--warmup', String(WARMUP[model]), '--mode', 'eager', '--precision', 'fp32', '--device', 'cpu',
      '--threads', String(THREADS), '--workers', String(workers), '--memory-format', memoryFormat],
    {
      encoding: 'utf8',
      maxBuffer: 16 << 20,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: ompWait === 'passive' ? { ...process.env, OMP_WAIT_POLICY: 'PASSIVE' } : process.env,
    },
  );
  return JSON.parse(out.trim().split('\n').at(-1));
}

// ---- PyTorch at its best: every combination of 0 or 1 DataLoader workers and
// OpenMP's wait policy (default spin-then-sleep, or OMP_WAIT_POLICY=PASSIVE:
// spinning threads lose badly when other jobs share the cores; on this 2-core
// machine PASSIVE ran PyTorch's MLP 4-10x faster with 0 workers), then, for the
// convolution models, contiguous (NCHW) instead of channels_last with the best
// of those. Each once over half the timed steps; the fastest races.
const tuning = {};
const best = {};
for (const model of MODELS) {
  const tried = [];
  const measure = (setting) => {
    const r = theirs(model, setting, Math.ceil(STEPS[model] / 2));
    tried.push({ ...setting, samplesPerSec: r.samplesPerSec });
    console.log(`tune ${model}: PyTorch workers=${setting.workers} ${setting.memoryFormat} OMP wait ${setting.ompWait}: ${r.samplesPerSec.toFixed(0)} samples/s`);
    return r.samplesPerSec;
  };
  const format = model === 'mlp' ? 'contiguous' : 'channels_last';
  const grid = args.includes('--skip-tune')
    ? [{ workers: 0, ompWait: 'passive' }]
    : [{ workers: 0, ompWait: 'default' }, { workers: 0, ompWait: 'passive' }, { workers: 1, ompWait: 'default' }, { workers: 1, ompWait: 'passive' }];
  let setting = null;
  let rate = 0;
  for (const g of grid) {
    const candidate = { ...g, memoryFormat: format };
    const r = measure(candidate);
    if (r > rate) [setting, rate] = [candidate, r];
  }
  if (model !== 'mlp' && !args.includes('--skip-tune')) {
    const candidate = { ...setting, memoryFormat: 'contiguous' };
    if (measure(candidate) > rate) setting = candidate;
  }
  tuning[model] = tried;
  best[model] = setting;
}

// ---- the race: rounds of A/B (with --baseline A/B/C), rotating which side goes first
const runs = {};
for (const model of MODELS) {
  runs[model] = [];
  for (let i = 0; i < PAIRS; i++) {
    const sides = [['trainbench', () => ours(model)], ['pytorch', async () => theirs(model, best[model])]];
    if (baseline) sides.push(['baseline', () => ours(model, baseline)]);
    const got = {};
    for (let k = 0; k < sides.length; k++) {
      const [name, run] = sides[(i + k) % sides.length];
      got[name] = await run();
    }
    const row = { ...got, ratio: got.trainbench.samplesPerSec / got.pytorch.samplesPerSec };
    if (baseline) {
      row.baselineRatio = got.baseline.samplesPerSec / got.pytorch.samplesPerSec;
      row.speedup = got.trainbench.samplesPerSec / got.baseline.samplesPerSec;
    }
    runs[model].push(row);
    console.log(`${model} round ${i + 1}: trainbench ${got.trainbench.samplesPerSec.toFixed(0)}, PyTorch ${got.pytorch.samplesPerSec.toFixed(0)}${baseline ? `, baseline ${got.baseline.samplesPerSec.toFixed(0)}` : ''} samples/s, ratio ${row.ratio.toFixed(2)}`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const meanPhases = (list) => {
  const keys = [...new Set(list.flatMap((p) => Object.keys(p ?? {})))];
  return Object.fromEntries(keys.map((k) => [k, list.reduce((s, p) => s + (p?.[k] ?? 0), 0) / list.length]));
};
const summary = Object.fromEntries(
  MODELS.map((m) => {
    const rs = runs[m];
    const ratios = rs.map((r) => r.ratio);
    return [m, {
      trainbenchSamplesPerSec: median(rs.map((r) => r.trainbench.samplesPerSec)),
      pytorchSamplesPerSec: median(rs.map((r) => r.pytorch.samplesPerSec)),
      ratio: { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) },
      trainbenchPhasesMs: meanPhases(rs.map((r) => r.trainbench.phasesMs)),
      pytorchPhasesMs: meanPhases(rs.map((r) => r.pytorch.phasesMs)),
      pytorchSetting: best[m],
      ...(baseline
        ? {
            baselineSamplesPerSec: median(rs.map((r) => r.baseline.samplesPerSec)),
            baselineRatio: spread(rs.map((r) => r.baselineRatio)),
            speedup: spread(rs.map((r) => r.speedup)),
          }
        : {}),
    }];
  }),
);

function gitHead() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}
const fmt = (x, d = 0) => (x == null ? 'n/a' : Number(x).toFixed(d));
const cpuModel = os.cpus()[0]?.model ?? 'unknown';
const flags = (() => {
  try {
    return (/^flags\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '').split(' ').filter((f) => /^(avx|fma|amx)/.test(f));
  } catch {
    return [];
  }
})();
console.log(`\n${cpuModel}, ${os.cpus().length} cores (${flags.join(' ')}); batch ${BATCH}, fp32, ${THREADS} threads each; PyTorch ${torchVersion}; ${PAIRS} A/B pairs`);
console.log('| model | Trainbench samples/s | PyTorch samples/s | ratio (median) | ratio min–max | PyTorch setting |');
console.log('| --- | ---: | ---: | ---: | ---: | --- |');
for (const m of MODELS) {
  const s = summary[m];
  console.log(`| ${m} | ${fmt(s.trainbenchSamplesPerSec)} | ${fmt(s.pytorchSamplesPerSec)} | ${fmt(s.ratio.median, 2)} | ${fmt(s.ratio.min, 2)}–${fmt(s.ratio.max, 2)} | workers=${s.pytorchSetting.workers} ${s.pytorchSetting.memoryFormat} OMP wait ${s.pytorchSetting.ompWait} |`);
}
if (baseline) {
  console.log(`\nbaseline build (${baselinePath}) in the same rounds:`);
  console.log('| model | baseline samples/s | baseline / PyTorch (median, min–max) | this build / baseline (median, min–max) |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const m of MODELS) {
    const s = summary[m];
    console.log(`| ${m} | ${fmt(s.baselineSamplesPerSec)} | ${fmt(s.baselineRatio.median, 2)} (${fmt(s.baselineRatio.min, 2)}–${fmt(s.baselineRatio.max, 2)}) | ${fmt(s.speedup.median, 2)} (${fmt(s.speedup.min, 2)}–${fmt(s.speedup.max, 2)}) |`);
  }
}
console.log('\nphase breakdown, mean ms per step:');
for (const m of MODELS) {
  const line = (label, p) => `  ${m.padEnd(18)} ${label.padEnd(10)} ${Object.entries(p).map(([k, v]) => `${k} ${fmt(v, 2)}`).join('  ')}`;
  console.log(line('trainbench', summary[m].trainbenchPhasesMs));
  console.log(line('pytorch', summary[m].pytorchPhasesMs));
}

output.write(`cpu-race-${argValue(args, '--label', os.hostname()).replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`, {
  benchmark: 'cpu-race',
  date: new Date().toISOString(),
  host: { cpuModel, cores: os.cpus().length, simd: flags, memoryGiB: Math.round(os.totalmem() / 2 ** 30), loadAverage: os.loadavg() },
  trainbench: { addon: path.relative(root, addonPath), commit: gitHead(), baseline: baselinePath ?? null },
  loadAverageAtEnd: os.loadavg(),
  pytorch: { version: torchVersion, python, tuning },
  batch: BATCH,
  threads: THREADS,
  timedSteps: STEPS,
  summary,
  runs,
  notes: [
    'samples/s: trainbench from its steady-state step time after the warm-up steps (loader on its own thread); PyTorch over the timed steps after its warm-up, data loading included.',
    'Rounds rotate which side runs first; the ratio is trainbench / PyTorch per round; with --baseline, speedup is this build / the baseline build per round.',
    'PyTorch tuning, once each over half the timed steps: 0 or 1 DataLoader workers x OpenMP default or PASSIVE wait, then contiguous instead of channels_last for the conv models; the fastest races.',
  ],
});
