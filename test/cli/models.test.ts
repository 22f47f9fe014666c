// `trainbench models` (issue 27 item 1 on the CLI): the models a run can train, and a family sized to a CSV
// imported into the workspace, saved under models/ and trained by the command it prints.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ModelEntry } from '../../src-main/api/model-files';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir();
const outside = tempDir();
let datasetId = '';

async function trainbench(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--workspace', ws.dir], { env: { ...process.env, TRAINBENCH_WORKSPACE: ws.dir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** As from another folder, whose default workspace is another one: every path must be in the command itself. */
const elsewhere = tempDir();
async function fromElsewhere(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { cwd: elsewhere.dir, env: { ...process.env, TRAINBENCH_WORKSPACE: elsewhere.dir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  requireBuilt();
  // 4 feature columns and a 3-class label: what no built-in (784 inputs) can train.
  const rows = ['a,b,c,d,label'];
  for (let i = 0; i < 300; i++) rows.push(`${(i % 7) / 7},${(i % 5) / 5},${(i % 3) / 3},${(i % 11) / 11},${i % 3}`);
  writeFileSync(path.join(ws.dir, 'kinds.csv'), rows.join('\n') + '\n');
  const built = await trainbench('cache', 'build', path.join(ws.dir, 'kinds.csv'), '--label', 'label', '--name', 'kinds', '--json');
  expect(built.code, built.stderr).toBe(0);
  datasetId = (JSON.parse(built.stdout) as { dataset: { id: string } }).dataset.id;
}, 60_000);
afterAll(() => {
  ws.cleanup();
  outside.cleanup();
  elsewhere.cleanup();
});

describe('trainbench models size', () => {
  it('sizes the mlp to the CSV, saves it under models/, and the printed command trains it', async () => {
    const shown = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--widths', '16,8');
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^mlp sized to kinds \(input \[4\], 3 classes\)\n\{"family":"mlp","task":"classification","input":\[4\],"outputs":3,"hidden":\[16,8\]/);
    expect(shown.stdout).toContain('--save <name> writes it under models/');
    const json = JSON.parse((await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--json')).stdout) as unknown;
    expect(json).toMatchObject({ path: null, spec: { family: 'mlp', input: [4], outputs: 3 } });

    const saved = await fromElsewhere('models', 'size', 'mlp', '--data', `dataset:${datasetId}`, '--widths', '16', '--save', 'kinds-mlp', '--workspace', ws.dir);
    expect(saved.code, saved.stderr).toBe(0);
    const command = /train it: (trainbench train .*)$/m.exec(saved.stdout)?.[1];
    expect(command).toBe(`trainbench train --model kinds-mlp --data dataset:${datasetId} --workspace ${ws.dir}`);
    expect(JSON.parse(readFileSync(path.join(ws.dir, 'models', 'kinds-mlp.json'), 'utf8'))).toMatchObject({ family: 'mlp', input: [4], outputs: 3, hidden: [16] });
    // In the default workspace the command needs no --workspace.
    expect((await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--save', 'default-ws')).stdout).toMatch(/train it: trainbench train --model default-ws --data dataset:\S+\n$/);

    // Typed from another folder, as printed: the model file is found in the workspace it names.
    const trained = await fromElsewhere(...command!.split(' ').slice(1), '--epochs', '3', '--batch-size', '16', '--lr', '0.01', '--json', '--no-progress');
    expect(trained.code, trained.stderr).toBe(0);
    const result = JSON.parse(trained.stdout.trim().split('\n').at(-1)!) as { testAccuracy: number | null; steps: number };
    expect(result.steps).toBeGreaterThan(0);

    // Listed beside the built-ins, with its spec.
    const listed = await trainbench('models', '--json');
    const file = (JSON.parse(listed.stdout) as ModelEntry[]).find((m) => m.name === path.join('models', 'kinds-mlp.json'));
    expect(file).toMatchObject({ source: 'workspace', family: 'mlp', problem: null, spec: { hidden: [16] } });
    expect((await trainbench('models')).stdout).toMatch(/^mlp\s+built-in\s+mlp$/m);
  }, 120_000);

  it('refuses what cannot be sized or saved, naming the value', async () => {
    const cnn = await trainbench('models', 'size', 'cnn', '--data', 'kinds');
    expect(cnn.code).toBe(1);
    expect(cnn.stderr).toMatch(/^trainbench: cnn does not fit kinds: field 'x' has shape \[4\] per record, not an image/);
    const board = await trainbench('models', 'size', 'bottleneck_resnet', '--data', 'kinds');
    expect(board.stderr).toMatch(/needs fields 'policy' and 'value'/);

    const missing = await trainbench('models', 'size', 'mlp', '--data', 'flowers');
    expect(missing.stderr).toContain(`--data "flowers" is no dataset of this workspace; there are: dataset:${datasetId} (kinds)`);
    const family = await trainbench('models', 'size', 'mpl', '--data', 'kinds');
    expect(family.stderr).toContain('family must be one of mlp, cnn, bottleneck_resnet, got "mpl"; did you mean "mlp"?');
    const replaceOnly = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--replace');
    expect(replaceOnly.stderr).toContain('--replace replaces the file --save writes: give --save <name> too');
    const blocks = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--blocks-per-stage', '3');
    expect(blocks.stderr).toContain("--blocks-per-stage is the board network's (bottleneck_resnet), not mlp's");
    const noFile = await fromElsewhere('train', '--model', 'models/none.json', '--workspace', ws.dir);
    expect(noFile.stderr).toContain(`nor a spec file (no file at ${path.join(elsewhere.dir, 'models', 'none.json')} or ${path.join(ws.dir, 'models', 'none.json')})`);
    const widths = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--widths', '16,0');
    expect(widths.stderr).toContain('--widths must be 1 to 64 whole numbers >= 1 separated by commas, got "16,0" ("0")');

    // A name that is a path, an existing file without --replace, a planted link: each refused, nothing written outside.
    const escape = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--save', '../escape');
    expect(escape.stderr).toMatch(/name/);
    await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--save', 'twice');
    const again = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--widths', '4', '--save', 'twice');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/exists/);
    const replaced = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--widths', '4', '--save', 'twice', '--replace');
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(JSON.parse(readFileSync(path.join(ws.dir, 'models', 'twice.json'), 'utf8')).hidden).toEqual([4]);
    mkdirSync(path.join(ws.dir, 'models'), { recursive: true });
    symlinkSync(path.join(outside.dir, 'planted.json'), path.join(ws.dir, 'models', 'planted.json'));
    const planted = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--save', 'planted', '--replace');
    expect(planted.code).toBe(1);
    expect(() => readFileSync(path.join(outside.dir, 'planted.json'))).toThrow();
  }, 120_000);
});
