// Issue 14: the decisions made on a user's own script written up as an ADR, like the engine's: real
// runs of the fixture scripts through the CLI, then `trainbench report` over them (and beside an
// engine benchmark in one report).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, SCRIPTS } from './script-helpers';

const ws = tempDir();
afterAll(() => ws.cleanup());

/** The CLI with --workspace before the `--` that starts the user's command (after it, the script would get it). */
async function cliOut(workspace: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const dash = args.includes('--') ? args.indexOf('--') : args.length;
  const argv = [CLI, ...args.slice(0, dash), '--workspace', workspace, ...args.slice(dash)];
  return promisify(execFile)(process.execPath, argv, { maxBuffer: 64 * 1024 * 1024 });
}
const cli = async (workspace: string, args: string[]) => (await cliOut(workspace, args)).stdout;
let wizardStderr = '';
const runId = (out: string) => (JSON.parse(out) as { runId: string }).runId;
const TINY = path.join(SCRIPTS, 'tiny_train.py');
const ids: Record<string, string> = {};

interface Report {
  summary: { title: string; runIds: string[] };
  markdown: string;
  figures: { name: string }[];
  notes: string[];
}

beforeAll(async () => {
  const common = ['--json', '--no-progress', '--cwd', SCRIPTS];
  ids.asIs = runId(await cli(ws.dir, ['benchmark-training', '--warmup-steps', '1', '--steps', '10', '--repeat', '2', '--env', 'API_TOKEN=hunter2', ...common, '--', PYTHON, TINY]));
  ids.bigger = runId(await cli(ws.dir, ['benchmark-training', '--warmup-steps', '1', '--steps', '10', '--repeat', '2', '--set', 'dataloader.batch_size=32', '--env', 'API_TOKEN=hunter2', ...common, '--', PYTHON, TINY]));
  ids.search = runId(await cli(ws.dir, ['find-batch-size', '--start-batch', '16', '--steps', '3', '--warmup-steps', '1', '--env', 'OOM_AT=20', ...common, '--', PYTHON, path.join(SCRIPTS, 'oom_guard.py')]));
  ids.train = runId(await cli(ws.dir, ['train', '--max-steps', '40', '--warmup-steps', '2', '--env', 'STEPS=200', ...common, '--', PYTHON, TINY]));
  const wizard = await cliOut(ws.dir, ['optimise', '--repeat', '2', '--steps', '5', '--warmup-steps', '1', '--max-trials', '1', '--report', ...common, '--', PYTHON, path.join(SCRIPTS, 'slow_items.py')]);
  ids.wizard = runId(wizard.stdout);
  wizardStderr = wizard.stderr;
}, 300_000);

it('optimise --report -- <command> writes the wizard up as an ADR and says where it is', () => {
  const file = /^report {5}(\S+\.md) \(ADR (\d+), (\d+) figures beside it\)$/m.exec(wizardStderr);
  expect(file, wizardStderr).not.toBeNull();
  const md = readFileSync(file?.[1] ?? '', 'utf8');
  expect(md).toContain(`The wizard's verdict (\`${ids.wizard}\`, from its run file)`);
  expect(wizardStderr).toMatch(/open it in the workbench: trainbench serve/);
});

describe('an ADR report from runs of your own command', () => {
  let report: Report;
  beforeAll(async () => {
    report = JSON.parse(await cli(ws.dir, ['report', ids.asIs, ids.bigger, ids.search, ids.wizard, ids.train, '--json'])) as Report;
  }, 60_000);

  it('covers every run, in the order given, titled by the command', () => {
    expect(report.summary.runIds).toEqual([ids.asIs, ids.bigger, ids.search, ids.wizard, ids.train]);
    expect(report.summary.title).toBe(`Training performance of ${PYTHON} ${TINY} and 2 other commands`);
    expect(report.notes.filter((n) => /left out/.test(n))).toEqual([]);
  });

  it('says what ran and gives the command that measures each run again', () => {
    const md = report.markdown;
    expect(md).toContain('### Your command');
    expect(md).toContain(`trainbench benchmark-training --warmup-steps 1 --steps 10 --repeat 2 --timeout 600 --set dataloader.batch_size=32 --env 'API_TOKEN=<redacted>' --cwd ${SCRIPTS} --workspace <workspace> -- ${PYTHON} ${TINY}`);
    expect(md).toMatch(/trainbench find-batch-size --start-batch 16 .* --env OOM_AT=20 /);
    expect(md).toMatch(/trainbench optimise --warmup-steps 1 --steps 5 --repeat 2 --preset balanced --max-trials 1 /);
    // A credential's value stays out of a document people share.
    expect(md).not.toContain('hunter2');
  });

  it('writes the benchmarks, the search and the wizard trial up as attempts with their numbers and charts', () => {
    const md = report.markdown;
    expect(md).toMatch(/\| samples\/s, median \(sum over ranks\) \| [\d,]+ \| [\d,]+ \|/);
    // Issue 26 items 3-4 on the CPU: the compute floor beside the step, the copy and data floors and the energy said missing.
    expect(md).toMatch(/\| compute floor per step \(the step over it\) \| [\d.]+ ms \([\d,.]+x\) \| [\d.]+ ms \([\d,.]+x\) \|/);
    expect(md).toContain('| host-to-device copy floor per step (the step over it) | not measured | not measured |');
    expect(md).toContain('| GPU energy per sample (mJ) | not measured | not measured |');
    expect(md).toContain(`Measured by the benchmark \`${ids.asIs}\` (as is), per step and rank`);
    expect(md).toMatch(/^- Compute floor: [\d.]+ ms per step \([\d,]+ samples\/s\); the step is [\d,.]+× that\. 3 x 32 forward FLOPs\/sample/m);
    expect(md).toContain('- Host-to-device copy floor: not measured: the script trains on the CPU: it copies nothing to a device.');
    expect(md).toContain(`GPU energy of \`${ids.asIs}\`: not measured: the target trains on the CPU`);
    expect(md).toContain(`### Attempt 1: dataloader.batch_size=32 (\`${ids.bigger}\`)`);
    expect(md).toMatch(/batch 19 is the largest that fits \(20: E_OOM\)/);
    expect(md).toMatch(/### Attempt 3: dataloader\.num_workers 0 -> 2 \(wizard trial 1/);
    expect(md).toContain('**Configuration**: dataloader.num_workers 0 -> 2 (a pipeline change) on top of the current best');
    expect(md).toContain(`The wizard's verdict (\`${ids.wizard}\`, from its run file)`);
    const names = report.figures.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['script-phases.svg', 'script-throughput.svg', `script-batch-size-${ids.search}.svg`, `script-trials-${ids.wizard}.svg`]));
    expect(existsSync(path.join(ws.dir, 'reports'))).toBe(true);
  });

  it("says what the wizard's loss guard compared, and that the benchmarks compare speed only", () => {
    expect(report.markdown).toMatch(/The wizard `[\w-]+` checked the loss: a kept change keeps the mean loss over the measured steps within 5\.0%; (seed 0, set by Trainbench as torch was imported|the script seeds itself \(.+\))\./);
    expect(report.markdown).toContain("The benchmarks compare speed only, and the wizard's loss guard sees a few dozen steps");
  });

  it('a whole training run shows its loss curve, read by the probe without editing the script', () => {
    const md = report.markdown;
    expect(md).toContain(`### Training run \`${ids.train}\``);
    expect(md).toMatch(/\| steps \(rank 0\) \| 40 \|/);
    expect(md).toMatch(/\| last training loss \| [\d.]+ at step \d+ \|/);
    expect(report.figures.map((f) => f.name)).toEqual(expect.arrayContaining([`script-run-loss-${ids.train}.svg`, `script-run-throughput-${ids.train}.svg`]));
    expect(md).toMatch(new RegExp(`trainbench train --max-steps 40 --warmup-steps 2 `));
  });
});

it('one report holds an engine benchmark and a script benchmark, each written up by its own sections', async () => {
  const engine = runId(await cli(ws.dir, ['benchmark-training', '--model', 'mlp', '--data', 'fashion-mnist', '--steps', '10', '--warmup-steps', '2', '--repeat', '2', '--json', '--no-progress']));
  const report = JSON.parse(await cli(ws.dir, ['report', engine, ids.asIs, '--json'])) as Report;
  expect(report.summary.runIds).toEqual([engine, ids.asIs]);
  expect(report.summary.title).toMatch(/^Training performance of mlp on fashion-mnist/);
  const md = report.markdown;
  // The engine's status block says "Proposed" once; the script's follows it without a second one.
  expect(md.match(/^Proposed$/gm)).toHaveLength(1);
  expect(md).toContain(`Also from 1 run of your own training command`);
  expect(md.indexOf('<!-- tb:begin phases')).toBeLessThan(md.indexOf('<!-- tb:begin script-phases'));
  const saved = readFileSync(path.join(ws.dir, 'reports', readdirNewest(path.join(ws.dir, 'reports')), 'report.json'), 'utf8');
  expect(JSON.parse(saved)).toMatchObject({ runIds: [engine, ids.asIs] });
}, 180_000);

function readdirNewest(dir: string): string {
  return readdirSync(dir).filter((n) => /^\d{4}-/.test(n)).sort().at(-1) ?? '';
}
