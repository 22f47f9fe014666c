// Makes test/fixtures/runs-v1: one small run of every kind today's Trainbench writes into a
// workspace's runs/ folder, made by the built CLI on the CPU (Fashion-MNIST, tiny models, few
// steps), for the migration test (test/migration/run-files.test.ts). Run files must keep reading
// after the code that writes them changes; these are the files to keep reading.
//
//   node scripts/make-run-fixtures.mjs [--cli <bin/trainbench.js>] [--out <folder>] [--python <python3>]
//
// Each kind lands in <out>/<kind>/ as a small workspace of its own (runs/<id>/..., and for the
// engine's optimisation wizard its optimise/<optimiseId>/state.json), so a test copies any of them
// into a temporary workspace as they are. Regenerating replaces the folder: the README's ids,
// commit and the test's expected numbers must then be updated by hand.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : process.argv[at + 1];
};
const CLI = path.resolve(arg('--cli', path.join(repo, 'bin', 'trainbench.js')));
const OUT = path.resolve(arg('--out', path.join(repo, 'test', 'fixtures', 'runs-v1')));
const PYTHON = arg('--python', '/usr/bin/python3');
const SCRIPTS = path.join(repo, 'test', 'fixtures', 'scripts');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'tb-run-fixtures-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
const ws = path.join(tmp, 'workspace');
mkdirSync(ws);
// A tiny MLP (784 -> 32 -> 10): a checkpoint of 100 KB, steps of well under a millisecond.
const TINY = path.join(tmp, 'tiny-mlp.json');
writeFileSync(TINY, JSON.stringify({ family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [32] }));

/** The CLI's argv: its own options before the `--` that starts a user's command, --workspace last of them. */
function argv(args) {
  const dash = args.includes('--') ? args.indexOf('--') : args.length;
  return [CLI, ...args.slice(0, dash), '--workspace', ws, ...args.slice(dash)];
}

const runIds = () => (existsSync(path.join(ws, 'runs')) ? readdirSync(path.join(ws, 'runs')).sort() : []);
const made = [];

/** Runs the CLI to its end; the run it made is the one new folder of runs/. */
function cli(kind, args, env = {}) {
  const before = new Set(runIds());
  process.stderr.write(`${kind}: trainbench ${args.join(' ')}\n`);
  execFileSync(process.execPath, argv(args), { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...env } });
  return record(kind, args, before);
}

function record(kind, args, before) {
  const fresh = runIds().filter((id) => !before.has(id));
  if (fresh.length !== 1) throw new Error(`${kind}: expected one new run, found ${fresh.join(', ') || 'none'}`);
  made.push({ kind, id: fresh[0], args });
  return fresh[0];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the CLI in a process group of its own, waits until `ready(runDir)` holds, then sends
 * `signal`: SIGINT as Ctrl-C does (the run records itself cancelled), SIGKILL to the whole group
 * as a crash or power loss does (run.json stays `running`; readers call it interrupted).
 */
async function stopped(kind, args, ready, signal) {
  const before = new Set(runIds());
  process.stderr.write(`${kind}: trainbench ${args.join(' ')}  (then ${signal})\n`);
  const child = spawn(process.execPath, argv(args), { stdio: ['ignore', 'ignore', 'inherit'], detached: true });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  for (let waited = 0; ; waited += 100) {
    if (waited > 180_000) throw new Error(`${kind}: never got ready`);
    const fresh = runIds().filter((id) => !before.has(id));
    if (fresh.length === 1 && ready(path.join(ws, 'runs', fresh[0]))) break;
    await sleep(100);
  }
  if (signal === 'SIGKILL') process.kill(-child.pid, 'SIGKILL');
  else child.kill(signal);
  await exited;
  if (signal === 'SIGKILL') await sleep(500); // the group's other processes (engine host, script) go too
  return record(kind, args, before);
}

const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.endsWith('}')).length : 0);

const target = ['--model', TINY, '--data', 'fashion-mnist', '--no-progress'];
const engine = [...target, '--seed', '1'];
const script = ['--no-progress', '--cwd', SCRIPTS];
const tutorial = ['--', PYTHON, 'fashion_mnist_tutorial.py', '--epochs', '1'];

// The engine target.
cli('engine-train', ['train', ...engine, '--epochs', '1', '--batch-size', '64', '--sample-ratio', '0.05', '--json']);
cli('engine-benchmark', ['benchmark-training', ...engine, '--batch-size', '64', '--warmup-steps', '2', '--steps', '10', '--repeat', '3', '--json']);
cli('engine-batch-search', ['find-batch-size', ...target, '--memory-limit', '16MiB', '--steps', '3', '--json']);
cli('loader-benchmark', ['benchmark-dataloader', '--dataset', 'fashion-mnist-train', '--batch-size', '256', '--workers', '0,1', '--prefetch', '2', '--seconds', '0.3', '--json']);
cli('engine-optimise', ['optimise', ...engine, '--batch-size', '64', '--warmup-steps', '2', '--steps', '10', '--repeat', '3', '--max-trials', '2', '--no-batch-search', '--json']);
await stopped('engine-train-cancelled', ['train', ...engine, '--epochs', '20', '--batch-size', '64'], (dir) => lines(path.join(dir, 'events.jsonl')) >= 10, 'SIGINT');
await stopped('engine-train-killed', ['train', ...engine, '--epochs', '20', '--batch-size', '64'], (dir) => lines(path.join(dir, 'events.jsonl')) >= 10, 'SIGKILL');

// The user's own script (the PyTorch tutorial, and a script that runs out of memory at a batch of 100).
cli('script-train', ['train', ...script, '--max-steps', '30', '--warmup-steps', '5', '--no-output', '--json', ...tutorial, '--limit', '4096']);
cli('script-benchmark', ['benchmark-training', ...script, '--warmup-steps', '2', '--steps', '10', '--repeat', '3', '--no-output', '--json', ...tutorial]);
cli('script-batch-search', ['find-batch-size', ...script, '--start-batch', '16', '--steps', '3', '--warmup-steps', '1', '--env', 'OOM_AT=100', '--json', '--', PYTHON, 'oom_guard.py']);
cli('script-optimise', ['optimise', ...script, '--repeat', '2', '--steps', '5', '--warmup-steps', '1', '--max-trials', '2', '--json', ...tutorial, '--limit', '4096']);
await stopped(
  'script-optimise-killed',
  ['optimise', ...script, '--repeat', '2', '--steps', '5', '--warmup-steps', '1', '--max-trials', '4', ...tutorial, '--limit', '4096'],
  (dir) => existsSync(path.join(dir, 'state.json')),
  'SIGKILL',
);

// Copied out: each kind a workspace of its own (the folders made before are replaced; README.md stays).
mkdirSync(OUT, { recursive: true });
for (const e of readdirSync(OUT, { withFileTypes: true })) if (e.isDirectory()) rmSync(path.join(OUT, e.name), { recursive: true });
for (const { kind, id } of made) {
  cpSync(path.join(ws, 'runs', id), path.join(OUT, kind, 'runs', id), { recursive: true });
  const config = JSON.parse(readFileSync(path.join(ws, 'runs', id, 'run.json'), 'utf8')).config;
  if (config.optimiseId) {
    const state = path.join('optimise', config.optimiseId, 'state.json');
    cpSync(path.join(ws, state), path.join(OUT, kind, state));
  }
}

let total = 0;
const sizes = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sizes(p);
    else total += statSync(p).size;
  }
};
sizes(OUT);
for (const { kind, id, args } of made) process.stdout.write(`${kind}\t${id}\ttrainbench ${args.join(' ')}\n`);
process.stdout.write(`total ${total} bytes in ${OUT}\n`);
