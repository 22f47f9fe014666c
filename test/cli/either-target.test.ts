// Issue 25, item 5: one command measures either target. `benchmark-training`, `optimise`, `train` and
// `find-batch-size` measure your own command when it comes after '--'; a flag only the other target reads is
// refused by name; without '--' nothing changes. Issue 39, item 3: the *-script commands are gone (unknown commands).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseRunRecord } from '../../src-main/api/run-record';
import { TrainRunResultSchema } from '../../src-main/api/train-result';
import { scriptWizard } from '../helpers/target-detail';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from '../script/script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const TUTORIAL = [PYTHON, path.join(SCRIPTS, 'fashion_mnist_tutorial.py'), '--epochs', '1', '--limit', '640'];
const SMALL_BENCHMARK = ['--no-output', '--warmup-steps', '2', '--steps', '5', '--repeat', '1'];

/** What commander answers for a command that is no longer there (the *-script commands of before issue 39). */
async function expectUnknownCommand(name: string, args: string[]) {
  const old = await runCli([name, ...args]);
  expect(old.code).toBe(1);
  expect(old.stdout).toBe('');
  expect(old.stderr).toContain(`error: unknown command '${name}'`);
}

function runRecord(runDir: string) {
  return parseRunRecord(readFileSync(path.join(ws.dir, runDir, 'run.json'), 'utf8')).record!;
}

describe('benchmark-training -- <command>', () => {
  it('benchmarks the script with the script side\'s settings, as JSON and as text; benchmark-script is no command', async () => {
    const mark = newMark();
    const env = ['--env', `TB_TEST_MARK=${mark}`];
    const viaEngineName = await runCli(['benchmark-training', '--json', ...SMALL_BENCHMARK, ...env, '--workspace', ws.dir, '--', ...TUTORIAL]);
    expect(viaEngineName.code, viaEngineName.stderr).toBe(0);
    await expectUnknownCommand('benchmark-script', ['--json', ...SMALL_BENCHMARK, ...env, '--workspace', ws.dir, '--', ...TUTORIAL]);
    const a = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(viaEngineName.stdout)));
    // The script's settings, not the engine command's defaults (--steps 50, --repeat 3).
    expect(a).toMatchObject({ steps: 5, warmupSteps: 2, repeat: 1, batchSize: 64, device: 'cpu' });
    expect(a.target).toMatchObject({ kind: 'script', command: { kind: 'script', command: TUTORIAL } });
    expect(a.samplesPerSec).toBeGreaterThan(0);
    expect(runRecord(a.runDir)).toMatchObject({ kind: 'benchmark', status: 'completed', config: { target: { kind: 'script' } } });

    const text = await runCli(['benchmark-training', ...SMALL_BENCHMARK, '--workspace', ws.dir, '--', ...TUTORIAL]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^benchmark {2}.*fashion_mnist_tutorial\.py --epochs 1 --limit 640$/m);
    expect(text.stdout).toMatch(/^launch {2}samples\/s/m);
    expect(text.stderr).toMatch(/^launch 1 of 1: [\d,]+ samples\/s$/m);
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
    const r = scriptWizard(JSON.parse(stdout));
    expect(r.target.loader).toMatchObject({ num_workers: 0, batch_size: 32 });
    expect(r.baseline.repetitions).toHaveLength(2);
    expect(r.trials).toHaveLength(1);
    expect(r.trials[0].change).toMatchObject({ knob: 'dataloader.num_workers', from: 0, to: 2 });
    expect(r.trials[0].candidateSamplesPerSec).toHaveLength(2);
    expect(r.skipped.find((s) => s.change.knob === 'cudnn.benchmark')?.why).toContain('this script trains on cpu');
    expect(runRecord(r.runDir)).toMatchObject({ kind: 'optimise', status: 'completed' });
    expect(processesWithMark(mark)).toEqual([]);

    // The wizard's run id is a script optimisation's: optimise --resume goes on with that script (optimise-script is no command).
    const resumed = await runCli(['optimise', '--resume', r.runId, '--yes', '--workspace', ws.dir]);
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain(`script optimisation ${r.runId} completed: there is nothing left to resume`);
    await expectUnknownCommand('optimise-script', ['--resume', r.runId, '--workspace', ws.dir]);
  }, 300_000);
});

describe('train -- <command>', () => {
  it('trains the command, recorded as a train run', async () => {
    const { code, stdout, stderr } = await runCli(['train', '--json', '--no-output', '--max-steps', '5', '--warmup-steps', '2', '--workspace', ws.dir, '--', PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'plain']);
    expect(code, stderr).toBe(0);
    const r = TrainRunResultSchema.parse(JSON.parse(stdout));
    expect(r).toMatchObject({ steps: 5, batchSize: 16, stepTime: { warmupSteps: 2 }, target: { kind: 'script', ended: 'maxSteps' } });
    expect(runRecord(r.runDir)).toMatchObject({ kind: 'train', status: 'completed' });
  }, 60_000);

  it("reads a shared flag with the script side's own rule: --max-steps 0 is refused for a script (train-script is no command)", async () => {
    const cmd = [PYTHON, path.join(SCRIPTS, 'tiny_train.py')];
    const unified = await runCli(['train', '--max-steps', '0', '--workspace', ws.dir, '--', ...cmd]);
    expect(unified.code).toBe(1);
    expect(unified.stderr.split('\n')[0]).toBe(`error: option '--max-steps <n>' argument '0' is invalid. --max-steps must be an integer >= 1, got "0"`);
    expect(unified.stderr).toContain('--max-steps must be an integer >= 1');
    await expectUnknownCommand('train-script', ['--max-steps', '0', '--workspace', ws.dir, '--', ...cmd]);
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
      `trainbench: ${message} (a model our engine trains), not to a script target (your own command after '--'): leave ${message.includes(' and ') ? 'them' : 'it'} out, or drop the command to measure an engine model`,
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
    expect(stderr).toContain(`trainbench: ${message} to a script target only (your own command after '--'), not to the engine target: give the command (trainbench ${name} [options] -- python3 train.py)`);
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
    expect(stderr).toContain(`trainbench: unexpected argument "tiny_train.py": put your own training command after '--' (trainbench ${name} [options] -- python3 train.py)`);
    expect(existsSync(path.join(stray.dir, 'runs'))).toBe(false);
  });
});

describe('--help', () => {
  it.each([
    ['benchmark-training', 'benchmark-script'],
    ['optimise', 'optimise-script'],
    ['train', 'train-script'],
    ['find-batch-size', null],
  ])('%s documents the -- command form, and which flags belong to which target (%s is no command)', async (name, old) => {
    const { code, stdout } = await runCli([name, '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain(`Usage: trainbench ${name} [options] [-- command...]`);
    expect(stdout).toMatch(/^ {2}command +your own training command, after '--'/m);
    if (old) {
      expect(stdout).not.toContain(old);
      await expectUnknownCommand(old, []);
    }
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
    const readings = stdout.slice(stdout.indexOf("With a command after '--', these read as a script target reads them:"));
    expect(readings.replace(/\s+/g, ' ')).toContain('--steps <n> measured steps, after which the probe ends the script (default: it runs to its own end)');
  });
});
