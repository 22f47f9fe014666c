// Issue 25, item 5: one command measures either target. `benchmark-training`, `optimise`, `train` and
// `find-batch-size` measure your own command when it comes after '--', exactly as the *-script commands
// (kept as aliases) do; a flag only the other target reads is refused by name; without '--' nothing changes.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseRunRecord } from '../../src-main/api/run-record';
import { ScriptTrainResultSchema } from '../../src-main/api/script-run';
import { ScriptBenchmarkResultSchema, ScriptOptimiseResultSchema } from '../../src-main/api/script-target';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from '../script/script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const TUTORIAL = [PYTHON, path.join(SCRIPTS, 'fashion_mnist_tutorial.py'), '--epochs', '1', '--limit', '640'];
const SMALL_BENCHMARK = ['--no-output', '--warmup-steps', '2', '--steps', '5', '--repeat', '1'];

/** The keys of a JSON value, nested, with what each holds: two results of one kind have the same shape. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.length ? [shape(value[0])] : [];
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, shape(v)]));
  // A measurement over a few steps may be there in one launch and not in the next (a window under one
  // telemetry period): the two commands agree on the fields, not on which of them were measured.
  return value === null || typeof value === 'number' ? 'number or null' : typeof value;
}

/** The labels of the text result, down to the findings (whose lines depend on the numbers). */
function labels(stdout: string): string[] {
  const lines = stdout.split('\n');
  return lines.slice(0, lines.indexOf('findings')).map((l) => l.slice(0, 11));
}

function runRecord(runDir: string) {
  return parseRunRecord(readFileSync(path.join(ws.dir, runDir, 'run.json'), 'utf8')).record!;
}

describe('benchmark-training -- <command>', () => {
  it('benchmarks the script as benchmark-script does: the same result, as JSON and as text', async () => {
    const mark = newMark();
    const env = ['--env', `TB_TEST_MARK=${mark}`];
    const viaEngineName = await runCli(['benchmark-training', '--json', ...SMALL_BENCHMARK, ...env, '--workspace', ws.dir, '--', ...TUTORIAL]);
    expect(viaEngineName.code, viaEngineName.stderr).toBe(0);
    const viaAlias = await runCli(['benchmark-script', '--json', ...SMALL_BENCHMARK, ...env, '--workspace', ws.dir, '--', ...TUTORIAL]);
    expect(viaAlias.code, viaAlias.stderr).toBe(0);
    const a = ScriptBenchmarkResultSchema.parse(JSON.parse(viaEngineName.stdout));
    const b = ScriptBenchmarkResultSchema.parse(JSON.parse(viaAlias.stdout));
    expect(shape(JSON.parse(viaEngineName.stdout))).toEqual(shape(JSON.parse(viaAlias.stdout)));
    // The script's settings, not the engine command's defaults (--steps 50, --repeat 3).
    expect(a).toMatchObject({ steps: 5, warmupSteps: 2, repeat: 1, batchSize: 64, device: 'cpu' });
    expect(a.target).toEqual(b.target);
    expect(a.target).toMatchObject({ kind: 'script', command: TUTORIAL });
    expect(a.samplesPerSec).toBeGreaterThan(0);
    expect(runRecord(a.runDir)).toMatchObject({ kind: 'benchmark', status: 'completed', config: { target: { kind: 'script' } } });

    const text = await runCli(['benchmark-training', ...SMALL_BENCHMARK, '--workspace', ws.dir, '--', ...TUTORIAL]);
    expect(text.code, text.stderr).toBe(0);
    const aliasText = await runCli(['benchmark-script', ...SMALL_BENCHMARK, '--workspace', ws.dir, '--', ...TUTORIAL]);
    expect(labels(text.stdout)).toEqual(labels(aliasText.stdout));
    expect(text.stdout).toMatch(/^benchmark {2}.*fashion_mnist_tutorial\.py --epochs 1 --limit 640$/m);
    expect(text.stdout).toMatch(/^launch {2}samples\/s/m);
    for (const progress of [text.stderr, aliasText.stderr]) expect(progress).toMatch(/^launch 1 of 1: [\d,]+ samples\/s$/m);
    expect(processesWithMark(mark)).toEqual([]);
  }, 120_000);
});

describe('optimise -- <command>', () => {
  it('runs the script wizard (a baseline, then a DataLoader change A/B/A/B), and --resume knows a script run', async () => {
    const mark = newMark();
    const { code, stdout, stderr } = await runCli(
      ['optimise', '--json', '--repeat', '2', '--steps', '4', '--warmup-steps', '1', '--max-trials', '1', '--workspace', ws.dir, '--env', `TB_TEST_MARK=${mark}`, '--', PYTHON, path.join(SCRIPTS, 'slow_items.py')],
      300_000,
    );
    expect(code, stderr).toBe(0);
    const r = ScriptOptimiseResultSchema.parse(JSON.parse(stdout));
    expect(r.loader).toMatchObject({ num_workers: 0, batch_size: 32 });
    expect(r.baseline.repetitions).toHaveLength(2);
    expect(r.trials).toHaveLength(1);
    expect(r.trials[0].change).toMatchObject({ knob: 'dataloader.num_workers', from: 0, to: 2 });
    expect(r.trials[0].candidateSamplesPerSec).toHaveLength(2);
    expect(r.skipped.find((s) => s.change.knob === 'cudnn.benchmark')?.why).toContain('this script trains on cpu');
    expect(runRecord(r.runDir)).toMatchObject({ kind: 'optimise', status: 'completed' });
    expect(processesWithMark(mark)).toEqual([]);

    // The wizard's run id is a script optimisation's: optimise --resume goes to it as optimise-script --resume does.
    const resumed = await runCli(['optimise', '--resume', r.runId, '--workspace', ws.dir]);
    const alias = await runCli(['optimise-script', '--resume', r.runId, '--workspace', ws.dir]);
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain(`script optimisation ${r.runId} completed: there is nothing left to resume`);
    expect(resumed.stderr.split('\n')[0]).toBe(alias.stderr.split('\n')[0]);
  }, 300_000);
});

describe('train -- <command>', () => {
  it('trains the command as train-script does, recorded as a train run', async () => {
    const { code, stdout, stderr } = await runCli(['train', '--json', '--no-output', '--max-steps', '5', '--warmup-steps', '2', '--workspace', ws.dir, '--', PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'plain']);
    expect(code, stderr).toBe(0);
    const r = ScriptTrainResultSchema.parse(JSON.parse(stdout));
    expect(r).toMatchObject({ steps: 5, ended: 'maxSteps', batchSize: 16, warmupSteps: 2 });
    expect(runRecord(r.runDir)).toMatchObject({ kind: 'train', status: 'completed' });
  }, 60_000);

  it("reads a shared flag with the script's own rule: --max-steps 0 is refused as train-script refuses it", async () => {
    const cmd = [PYTHON, path.join(SCRIPTS, 'tiny_train.py')];
    const unified = await runCli(['train', '--max-steps', '0', '--workspace', ws.dir, '--', ...cmd]);
    const alias = await runCli(['train-script', '--max-steps', '0', '--workspace', ws.dir, '--', ...cmd]);
    expect(unified.code).toBe(1);
    expect(unified.stderr.split('\n')[0]).toBe(alias.stderr.split('\n')[0]);
    expect(unified.stderr).toContain('--max-steps must be an integer >= 1');
  });
});

describe('a flag of the other target', () => {
  const refusals = tempDir();
  afterAll(() => refusals.cleanup());
  const cmd = [PYTHON, path.join(SCRIPTS, 'tiny_train.py')];

  it.each([
    ['benchmark-training', ['--model', 'cnn'], '--model applies to the engine target only'],
    ['benchmark-training', ['--model', 'cnn', '--data', 'example-board'], '--model and --data apply to the engine target only'],
    ['optimise', ['--read-from', 'source'], '--read-from applies to the engine target only'],
    ['train', ['--epochs', '2'], '--epochs applies to the engine target only'],
    ['find-batch-size', ['--memory-limit', '1GiB'], '--memory-limit applies to the engine target only'],
  ])('%s %j with a command', async (name, flags, message) => {
    const { code, stdout, stderr } = await runCli([name, ...flags, '--workspace', refusals.dir, '--', ...cmd]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual([
      `trainbench: E_BAD_INPUT: ${message} (a model our engine trains), not to a script target (your own command after '--'): leave ${message.includes(' and ') ? 'them' : 'it'} out, or drop the command to measure an engine model`,
      `Run 'trainbench ${name} --help' for the usage.`,
    ]);
    expect(existsSync(path.join(refusals.dir, 'runs'))).toBe(false);
  });

  it.each([
    ['benchmark-training', ['--set', 'dataloader.num_workers=2'], '--set applies'],
    ['benchmark-training', ['--no-output', '--cwd', '/tmp'], '--cwd and --no-output apply'],
    ['optimise', ['--env', 'A=1'], '--env applies'],
    ['train', ['--timeout', '60'], '--timeout applies'],
    ['find-batch-size', ['--start-batch', '4'], '--start-batch applies'],
  ])('%s %j without a command', async (name, flags, message) => {
    const { code, stdout, stderr } = await runCli([name, ...flags, '--workspace', refusals.dir]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(`trainbench: E_BAD_INPUT: ${message} to a script target only (your own command after '--'), not to the engine target: give the command (trainbench ${name} [options] -- python3 train.py)`);
    expect(stderr).toContain(`Run 'trainbench ${name} --help' for the usage.`);
    expect(existsSync(path.join(refusals.dir, 'runs'))).toBe(false);
  });
});

describe('words after the options without --', () => {
  const stray = tempDir();
  afterAll(() => stray.cleanup());
  it.each(['train', 'benchmark-training', 'optimise', 'find-batch-size'])('%s refuses them by name instead of launching them', async (name) => {
    const { code, stdout, stderr } = await runCli([name, '--workspace', stray.dir, 'tiny_train.py']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(`trainbench: E_BAD_INPUT: unexpected argument "tiny_train.py": put your own training command after '--' (trainbench ${name} [options] -- python3 train.py)`);
    expect(existsSync(path.join(stray.dir, 'runs'))).toBe(false);
  });
});

describe('--help', () => {
  it.each([
    ['benchmark-training', 'benchmark-script'],
    ['optimise', 'optimise-script'],
    ['train', 'train-script'],
    ['find-batch-size', null],
  ])('%s documents the -- command form, and which flags belong to which target', async (name, alias) => {
    const { code, stdout } = await runCli([name, '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain(`Usage: trainbench ${name} [options] [-- command...]`);
    expect(stdout).toMatch(/^ {2}command +your own training command, after '--'/m);
    if (alias) expect(stdout.replace(/\s+/g, ' ')).toContain(`as \`${alias}\` does`);
    const engine = stdout.indexOf("Engine target (no command after '--'):");
    const script = stdout.indexOf("Script target (your own command after '--'):");
    expect(engine).toBeGreaterThan(0);
    expect(script).toBeGreaterThan(engine);
    expect(stdout.slice(engine, script)).toMatch(/^ {2}--model <name\|spec\.json>/m);
    expect(stdout.slice(script)).toMatch(/^ {2}--set <key=value>/m);
    expect(stdout.slice(script)).toMatch(/^ {2}--cwd <dir>/m);
  });

  it('says how a shared flag reads for a script where it differs (benchmark-training --steps: the script runs to its end)', async () => {
    const { stdout } = await runCli(['benchmark-training', '--help']);
    const readings = stdout.slice(stdout.indexOf("With a command after '--', these read as benchmark-script reads them:"));
    expect(readings.replace(/\s+/g, ' ')).toContain('--steps <n> measured steps, after which the probe ends the script (default: it runs to its own end)');
  });
});
