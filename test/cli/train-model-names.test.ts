// Issue 41 item 9: `--model` with `--data dataset:...` on the CLI. A built-in family is sized to a workspace
// dataset it cannot take (as New run sizes it), the name a spec was saved under trains as `--model NAME`,
// and a name that is none of them is refused with what there is.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir();
let datasetId = '';

async function trainbench(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--workspace', ws.dir], { cwd: ws.dir, env: { ...process.env, TRAINBENCH_WORKSPACE: ws.dir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The spec the run recorded in its run.json (the result line of `train --json` names the run). */
function recordedSpec(stdout: string): Record<string, unknown> {
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { type: string; runId: string; steps: number };
  expect(result.type).toBe('result');
  expect(result.steps).toBeGreaterThan(0);
  const record = JSON.parse(readFileSync(path.join(ws.dir, 'runs', result.runId, 'run.json'), 'utf8')) as { config: { spec: Record<string, unknown> } };
  return record.config.spec;
}

const quick = ['--epochs', '1', '--json', '--no-progress'];

beforeAll(async () => {
  requireBuilt();
  // 4 feature columns and a 3-class label: the built-in mlp takes 28x28 inputs and 10 classes.
  const rows = ['a,b,c,d,label'];
  for (let i = 0; i < 200; i++) rows.push(`${(i % 7) / 7},${(i % 5) / 5},${(i % 3) / 3},${(i % 11) / 11},${i % 3}`);
  writeFileSync(path.join(ws.dir, 'kinds.csv'), rows.join('\n') + '\n');
  const built = await trainbench('cache', 'build', path.join(ws.dir, 'kinds.csv'), '--label', 'label', '--name', 'kinds', '--json');
  expect(built.code, built.stderr).toBe(0);
  datasetId = (JSON.parse(built.stdout) as { dataset: { id: string } }).dataset.id;
}, 60_000);
afterAll(() => ws.cleanup());

describe('trainbench train --model with --data dataset:...', () => {
  it('sizes a built-in family to the dataset, says so, and records the sized spec', async () => {
    const trained = await trainbench('train', '--model', 'mlp', '--data', `dataset:${datasetId}`, ...quick);
    expect(trained.code, trained.stderr).toBe(0);
    expect(trained.stderr).toContain(`mlp sized to dataset:${datasetId}: input [4], 3 outputs (the built-in mlp takes 28x28 and 10 outputs)`);
    expect(recordedSpec(trained.stdout)).toMatchObject({ family: 'mlp', task: 'classification', input: [4], outputs: 3, hidden: [256, 128] });

    // Every command taking --model and --data resolves them in the same place.
    const bench = await trainbench('benchmark-training', '--model', 'mlp', '--data', 'dataset:kinds', '--no-progress');
    expect(bench.code, bench.stderr).toBe(0);
    expect(bench.stderr).toContain('mlp sized to dataset:kinds: input [4], 3 outputs');

    // A family that cannot take the data is refused, naming the value and what to do.
    const cnn = await trainbench('train', '--model', 'cnn', '--data', 'dataset:kinds', ...quick);
    expect(cnn.code).toBe(1);
    expect(cnn.stderr).toContain("--model cnn cannot be sized to dataset:kinds: field 'x' has shape [4] per record, not an image");
    expect(cnn.stderr).toContain('train the mlp, which is sized to it (--model mlp), or size one to it: trainbench models size <family> --data dataset:kinds --save NAME, then --model NAME');
  }, 120_000);

  it('trains a spec by the name it was saved under', async () => {
    const saved = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--widths', '16', '--save', 'small');
    expect(saved.code, saved.stderr).toBe(0);
    const trained = await trainbench('train', '--model', 'small', '--data', `dataset:${datasetId}`, ...quick);
    expect(trained.code, trained.stderr).toBe(0);
    expect(trained.stderr).not.toContain('sized to');
    expect(recordedSpec(trained.stdout)).toMatchObject({ family: 'mlp', input: [4], outputs: 3, hidden: [16] });

    // A saved spec is used as it is: one whose input cannot take the data is refused up front, naming `models size`.
    writeFileSync(path.join(ws.dir, 'models', 'wide.json'), JSON.stringify({ family: 'mlp', input: [784], outputs: 10 }));
    const wide = await trainbench('train', '--model', 'wide', '--data', 'dataset:kinds', ...quick);
    expect(wide.code).toBe(1);
    expect(wide.stderr).toContain("--model wide takes input [784] (784 values) but dataset:kinds has 4 values per record in 'x': size one to it: trainbench models size <family> --data dataset:kinds --save NAME");

    const searched = await trainbench('find-batch-size', '--model', 'small', '--data', 'dataset:kinds', '--memory-limit', '64MiB', '--no-progress');
    expect(searched.code, searched.stderr).toBe(0);
    expect(searched.stdout).toMatch(/recommended \d+/);
  }, 120_000);

  it('refuses an unknown name, listing the built-ins and the saved specs (at most 20)', async () => {
    const unknown = await trainbench('train', '--model', 'nosuch', '--data', 'dataset:kinds', ...quick);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('--model "nosuch" is neither a built-in model (mlp, cnn, bottleneck_resnet), nor a spec saved in the workspace');
    expect(unknown.stderr).toMatch(/models\/<name>\.json: [^)]*\bsmall\b/);
    expect(unknown.stderr).toContain(`nor a spec file (no file at ${path.join(ws.dir, 'nosuch')}`);
    expect(unknown.stderr).toContain('trainbench models list shows every model there is');
    expect(unknown.stderr).not.toContain('did you mean');
    expect((await trainbench('train', '--model', 'smal', '--data', 'dataset:kinds')).stderr).toContain('did you mean "small"?');

    // Many saved specs: 20 named, the rest counted.
    mkdirSync(path.join(ws.dir, 'models'), { recursive: true });
    const spec = readFileSync(path.join(ws.dir, 'models', 'small.json'), 'utf8');
    for (let i = 0; i < 30; i++) writeFileSync(path.join(ws.dir, 'models', `many-${String(i).padStart(2, '0')}.json`), spec);
    const many = await trainbench('train', '--model', 'nosuch', '--data', 'dataset:kinds');
    expect(many.code).not.toBe(0);
    const listed = /models\/<name>\.json: ([^)]*)\)/.exec(many.stderr)?.[1] ?? '';
    // small, wide and the 30 written here: 20 named, 12 counted.
    expect(listed).toMatch(/, and 12 more$/);
    expect(listed.replace(/, and 12 more$/, '').split(', ')).toHaveLength(20);
  }, 120_000);

  it('takes a built-in name over a spec saved under the same name, and says how to train the file', async () => {
    // The built-in wins rather than refusing as ambiguous: `--model mlp` is documented and must not change
    // meaning because of a file in one workspace, and the file stays reachable by its path (said on stderr).
    const saved = await trainbench('models', 'size', 'mlp', '--data', 'kinds', '--widths', '5', '--save', 'mlp');
    expect(saved.code, saved.stderr).toBe(0);
    const trained = await trainbench('train', '--model', 'mlp', '--data', 'dataset:kinds', ...quick);
    expect(trained.code, trained.stderr).toBe(0);
    expect(trained.stderr).toContain('--model mlp is the built-in; the spec saved as models/mlp.json trains with --model models/mlp.json');
    expect(recordedSpec(trained.stdout)).toMatchObject({ family: 'mlp', input: [4], outputs: 3, hidden: [256, 128] });

    const file = await trainbench('train', '--model', 'models/mlp.json', '--data', 'dataset:kinds', ...quick);
    expect(file.code, file.stderr).toBe(0);
    expect(recordedSpec(file.stdout)).toMatchObject({ hidden: [5] });
  }, 120_000);
  it('takes a value that reads as a file (foo.json) as that file, before a saved spec of the same name (the review)', async () => {
    const spec = (hidden: number[]) => JSON.stringify({ family: 'mlp', input: [4], outputs: 3, hidden });
    writeFileSync(path.join(ws.dir, 'mine.json'), spec([6]));
    mkdirSync(path.join(ws.dir, 'models'), { recursive: true });
    writeFileSync(path.join(ws.dir, 'models', 'mine.json'), spec([7]));
    const trained = await trainbench('train', '--model', 'mine.json', '--data', 'dataset:kinds', ...quick);
    expect(trained.code, trained.stderr).toBe(0);
    expect(recordedSpec(trained.stdout)).toMatchObject({ hidden: [6] });
  }, 120_000);
});
