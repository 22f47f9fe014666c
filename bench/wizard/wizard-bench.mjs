#!/usr/bin/env node
// The promise, measured (issue 42): for each workload of bench/workloads/, the plain script, the
// wizard's final configuration (`trainbench optimise -- python workload.py`, balanced and max-speed)
// and the expert's version, measured side by side: the wizards run first, then every configuration
// is launched once per round, rounds interleaved (the order rotating), through `trainbench
// benchmark-training --json`. Prints a table; writes JSON (--out FILE, or --save:
// bench/results/wizard-<device>.json) after each workload, so a killed call keeps what it finished.
//   node bench/wizard/wizard-bench.mjs [--size tiny|full] [--workloads resnet,bert,gpt2] [--python PY]
//     [--device cpu|cuda] [--device-name NAME] [--rounds N] [--repeat N] [--max-trials N]
//     [--presets balanced,max-speed] [--expert-compile-mode MODE] [--reports DIR] [--workspace DIR] [--out FILE | --save]
// Defaults: the full size on a CUDA device, tiny on a CPU; the Python of .venv-torch2 when there is one.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { argValue, benchOutput, numberArg, REPO_ROOT as root, tempFolder } from '../../scripts/bench-output.mjs';

import { tableLines, wizardSummary, workloadRows } from './rows.mjs';
import { LAUNCH_ENV, PROTOCOL, VARIANTS, WORKLOADS } from './workloads.mjs';

const args = process.argv.slice(2);
const output = benchOutput(args);
const venv = path.join(root, '.venv-torch2', 'bin', 'python');
const python = argValue(args, '--python', process.env.TB_TORCH2_PYTHON ?? (existsSync(venv) ? venv : 'python3'));
const wanted = argValue(args, '--workloads', WORKLOADS.map((w) => w.name).join(',')).split(',');
const unknown = wanted.filter((name) => !WORKLOADS.some((w) => w.name === name));
if (unknown.length) {
  console.error(`wizard-bench: no workload ${unknown.join(', ')} (there are ${WORKLOADS.map((w) => w.name).join(', ')})`);
  process.exit(2);
}

// What the Python sees: torch, its device, and which workloads' modules it lacks.
const probe = `
import importlib.util, json, sys, torch
print(json.dumps({"python": sys.version.split()[0], "torch": torch.__version__,
  "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
  "missing": [m for m in sys.argv[1].split(",") if importlib.util.find_spec(m) is None]}))`;
const env = JSON.parse(execFileSync(python, ['-c', probe, [...new Set(WORKLOADS.flatMap((w) => w.modules))].join(',')], { encoding: 'utf8' }));
const device = argValue(args, '--device', env.cuda ? 'cuda' : 'cpu');
const size = argValue(args, '--size', device === 'cuda' ? 'full' : 'tiny');
if (!PROTOCOL[size]) {
  console.error(`wizard-bench: --size is tiny or full, not ${size}`);
  process.exit(2);
}
const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
const deviceName = argValue(args, '--device-name', device === 'cuda' ? slug(env.cuda ?? 'cuda') : `cpu-dev-${os.cpus().length}core`);
const protocol = {
  ...PROTOCOL[size],
  rounds: numberArg(args, '--rounds', PROTOCOL[size].rounds),
  repeat: numberArg(args, '--repeat', PROTOCOL[size].repeat),
  maxTrials: numberArg(args, '--max-trials', PROTOCOL[size].maxTrials),
};
const presets = argValue(args, '--presets', 'balanced,max-speed').split(',');
const variants = VARIANTS.filter((v) => !v.preset || presets.includes(v.preset));
if (presets.some((p) => !VARIANTS.some((v) => v.preset === p))) {
  console.error(`wizard-bench: --presets takes ${VARIANTS.filter((v) => v.preset).map((v) => v.preset).join(', ')}, not ${presets.join(',')}`);
  process.exit(2);
}
const expertCompileMode = argValue(args, '--expert-compile-mode', undefined);
const reportsDir = argValue(args, '--reports', undefined);
const ws = argValue(args, '--workspace', undefined) ?? tempFolder('trainbench-bench-wizard-');
const cli = path.join(root, 'bin', 'trainbench.js');

// The CLI call in flight is stopped with us (it reaps its script's processes), also on Ctrl-C.
let running = null;
process.on('exit', () => running?.kill('SIGTERM'));

/** One CLI call with its --json result; the script's and the CLI's stderr go to a log in the workspace, whose end an error quotes. */
async function trainbench(cliArgs, log) {
  mkdirSync(path.join(ws, 'logs'), { recursive: true });
  const logFile = path.join(ws, 'logs', `${log}.txt`);
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [cli, ...cliArgs], { cwd: root, stdio: ['ignore', 'pipe', fd] });
  running = child;
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const code = await new Promise((resolve) => child.on('close', resolve));
  running = null;
  closeSync(fd);
  if (code === 0) return JSON.parse(stdout);
  const tail = readFileSync(logFile, 'utf8').slice(-3000);
  throw new Error(`trainbench ${cliArgs[0]} exited with ${code}: ${stdout.slice(-1000)}\n${tail}`);
}

const common = () => ['--json', '--no-progress', '--workspace', ws, '--timeout', String(protocol.timeoutS), ...Object.entries(LAUNCH_ENV).flatMap(([k, v]) => ['--env', `${k}=${v}`])];
const scriptOf = (w, variant) => [python, w.file, '--size', size, '--device', device, ...(variant.scriptArgs ?? []), ...(variant.scriptArgs && expertCompileMode ? ['--compile-mode', expertCompileMode] : [])];
const setFlags = (overrides) => Object.entries(overrides).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
const sameConfig = (a, b) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
const elapsed = (t0) => (performance.now() - t0) / 1000;

async function runWizard(w, variant) {
  const s = w.steps[size];
  const flags = ['optimise', ...common(), '--preset', variant.preset, '--repeat', String(protocol.repeat), '--warmup-steps', String(s.warmup), '--steps', String(s.steps)];
  flags.push('--max-trials', String(protocol.maxTrials), ...(reportsDir ? ['--report'] : []));
  const t0 = performance.now();
  const result = await trainbench([...flags, '--', ...scriptOf(w, {})], `${w.name}-${variant.id}`);
  return wizardSummary(result, elapsed(t0));
}

async function measureOnce(w, variant, overrides, round) {
  const s = w.steps[size];
  const flags = ['benchmark-training', ...common(), '--no-output', '--repeat', '1', '--warmup-steps', String(s.warmup), '--steps', String(s.steps), ...setFlags(overrides)];
  const r = await trainbench([...flags, '--', ...scriptOf(w, variant)], `${w.name}-${variant.id}-round${round}`);
  return r.samplesPerSec;
}

/** One workload's rows; `save` records how far it got, so a call killed at its time limit keeps the wizards it finished. */
async function runWorkload(w, save) {
  const t0 = performance.now();
  const missing = w.modules.filter((m) => env.missing.includes(m));
  if (missing.length) return { name: w.name, what: w.what, skipped: `${python} lacks ${missing.join(', ')}` };
  const measured = [];
  for (const variant of variants) {
    const entry = { id: variant.id, label: variant.label, command: scriptOf(w, variant), overrides: {}, sameAs: null, samples: [] };
    if (variant.preset) {
      process.stderr.write(`${w.name}: the wizard, ${variant.preset}...\n`);
      entry.wizard = await runWizard(w, variant);
      entry.overrides = entry.wizard.overrides;
      // A configuration already in the table is measured once (a wizard that kept nothing is the plain script).
      entry.sameAs = measured.find((m) => !m.scriptArgs && sameConfig(m.overrides, entry.overrides))?.id ?? null;
    }
    measured.push({ ...entry, scriptArgs: variant.scriptArgs });
    save({ name: w.name, what: w.what, partial: `stopped before the comparison; wizards done: ${measured.filter((m) => m.wizard).map((m) => m.id).join(', ') || 'none'}`, wizards: measured.filter((m) => m.wizard).map((m) => m.wizard) });
  }
  const launched = measured.filter((m) => m.sameAs === null);
  for (let round = 0; round < protocol.rounds; round++) {
    process.stderr.write(`${w.name}: round ${round + 1} of ${protocol.rounds} (${launched.length} configurations)\n`);
    for (let k = 0; k < launched.length; k++) {
      const m = launched[(k + round) % launched.length];
      m.samples.push(await measureOnce(w, m, m.overrides, round + 1));
    }
  }
  const rows = workloadRows(measured.map(({ scriptArgs: _, ...m }) => m));
  return { name: w.name, what: w.what, file: w.file, steps: w.steps[size], rows, seconds: elapsed(t0) };
}

const t0 = performance.now();
const result = {
  benchmark: 'wizard',
  date: new Date().toISOString(),
  device: { kind: device, name: deviceName, gpu: env.cuda, python: env.python, torch: env.torch },
  host: { cpuModel: os.cpus()[0]?.model, cores: os.cpus().length, loadAverageAtStart: os.loadavg()[0] },
  commit: process.env.TRAINBENCH_COMMIT ?? gitHead(),
  size,
  protocol: { ...protocol, presets, expertCompileMode: expertCompileMode ?? 'the script default: max-autotune on CUDA, default on the CPU' },
  workloads: [],
  seconds: 0,
  notes: [
    'samples/s: median of the launches of each configuration (one benchmark-training --repeat 1 launch per round, the rounds interleaved with the order rotating), 95% percentile bootstrap interval; counted by the probe in the batches the DataLoader yields.',
    "speedup: median over the plain script's median, with the bootstrap interval of that ratio; share of the expert's: median over the expert's median.",
    "wizard rows: trainbench optimise with the protocol's --repeat, --max-trials and the workload's steps, its final overrides then measured as --set flags; a row marked (= other) is that configuration, measured once.",
  ],
};

function gitHead() {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

console.log(
  `bench:wizard on ${deviceName} (${device}${env.cuda ? `, ${env.cuda}` : ''}), torch ${env.torch}, size ${size}, ${protocol.rounds} rounds, wizard (${presets.join(', ')}) --repeat ${protocol.repeat} --max-trials ${protocol.maxTrials}`,
);
for (const w of WORKLOADS.filter((x) => wanted.includes(x.name))) {
  const index = result.workloads.length;
  const save = (entry) => {
    result.workloads[index] = entry;
    result.seconds = elapsed(t0);
    result.host.loadAverageNow = os.loadavg()[0]; // other processes' load shows in the intervals' width
    output.write(`wizard-${deviceName}`, result);
  };
  let done;
  try {
    done = await runWorkload(w, save);
  } catch (err) {
    done = { name: w.name, what: w.what, error: String(err.message ?? err).slice(0, 6000) };
    console.error(`${w.name}: failed: ${done.error}`);
  }
  if (reportsDir) copyReports();
  save(done);
}

console.log('\n| workload | run | samples/s [95% CI] | x plain [CI] | of expert | wizard wall | kept |');
console.log('| --- | --- | ---: | ---: | ---: | ---: | --- |');
for (const w of result.workloads) {
  if (w.rows) console.log(tableLines(w.name, w.rows).join('\n'));
  else console.log(`| ${w.name} | ${w.skipped ? `skipped: ${w.skipped}` : `failed: ${(w.error ?? w.partial).split('\n')[0]}`} | | | | | |`);
}
for (const w of result.workloads.filter((x) => x.rows)) {
  for (const r of w.rows.filter((x) => x.wizard)) {
    console.log(`\n${w.name}, ${r.label}: loss check ${r.wizard.lossCheck.verdict}; ${r.wizard.finalVerdict}`);
    for (const t of r.wizard.trials) console.log(`  ${t.kept ? 'kept' : t.decision}: ${t.change}: ${t.why}`);
  }
}
console.log(`\nbench:wizard: ${(result.seconds / 60).toFixed(1)} min in all`);

function copyReports() {
  const from = path.join(ws, 'reports');
  if (!existsSync(from)) return;
  for (const name of readdirSync(from)) cpSync(path.join(from, name), path.join(reportsDir, name), { recursive: true });
}
