import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { listModels, parseModelSpec, readModelSpec } from '../../src-main/core/workspace/model-files';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

let ws: Workspace;
const cleanups: (() => void)[] = [];
const dir = (prefix: string) => {
  const t = tempDir(prefix);
  cleanups.push(t.cleanup);
  return t.dir;
};
const write = (rel: string, text: string) => {
  mkdirSync(path.dirname(path.join(ws.root, rel)), { recursive: true });
  writeFileSync(path.join(ws.root, rel), text);
};

beforeEach(async () => {
  ws = await openWorkspace(dir('model-files-'));
});
afterEach(() => {
  while (cleanups.length) cleanups.pop()?.();
});

describe('models.list', () => {
  it('lists the built-ins, then spec files of the top folder and models/, with the problem of each broken one', async () => {
    write('wide-mlp.json', JSON.stringify({ family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [512] }));
    write('models/board/small.json', JSON.stringify({ family: 'bottleneck_resnet', layers: [1], strides: [1], widths: [8] }));
    write('models/bad-cnn.json', JSON.stringify({ family: 'cnn', input: [1, 28, 28], outputs: 10, kernel: 4 }));
    write('models/typo.json', '{ "family": "mlp", ');
    write('notes.json', JSON.stringify({ title: 'not a model' }));
    const models = await listModels(ws);
    expect(models.filter((m) => m.source === 'builtin').map((m) => m.name)).toEqual(['mlp', 'cnn', 'bottleneck_resnet']);
    const files = models.filter((m) => m.source === 'workspace');
    expect(files.map((m) => m.name)).toEqual(['wide-mlp.json', 'models/bad-cnn.json', 'models/board/small.json', 'models/typo.json']);
    expect(files[0]).toMatchObject({ family: 'mlp', problem: null });
    // A usable file carries its spec as the contract reads it (Apply finds a wizard's model by it); a broken one none.
    expect(files[0].spec).toMatchObject({ family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [512] });
    expect(files[1].spec).toBeUndefined();
    expect(files[1].problem).toMatch(/model spec models\/bad-cnn.json is invalid: .*kernel must be odd/);
    expect(files[2]).toMatchObject({ family: 'bottleneck_resnet', problem: null });
    expect(files[3].problem).toMatch(/model spec models\/typo.json is not valid JSON/);
  });

  it('lists a link (here one leading outside the workspace) with its problem, never reading through it', async () => {
    const outside = dir('model-files-outside-');
    writeFileSync(path.join(outside, 'secret.json'), JSON.stringify({ family: 'mlp', input: [4], outputs: 2 }));
    mkdirSync(path.join(ws.root, 'models'), { recursive: true });
    symlinkSync(path.join(outside, 'secret.json'), path.join(ws.root, 'models', 'secret.json'));
    const entry = (await listModels(ws)).find((m) => m.name.includes('secret'));
    expect(entry).toMatchObject({ family: null, problem: expect.stringContaining('is a link') });
  });
});

describe('models.readSpec', () => {
  it('reads a spec with the contract defaults filled in', async () => {
    write('models/wide.json', JSON.stringify({ family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [512] }));
    const { path: rel, spec } = await readModelSpec(ws, 'models/wide.json');
    expect(rel).toBe(path.join('models', 'wide.json'));
    expect(spec).toMatchObject({ family: 'mlp', hidden: [512], dropout: 0, task: 'classification' });
  });

  it('names the file and the field that is wrong', async () => {
    write('models/bad.json', JSON.stringify({ family: 'cnn', input: [1, 28, 28], outputs: 10, strides: [1], channels: [8, 8] }));
    await expect(readModelSpec(ws, 'models/bad.json')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(/models\/bad.json is invalid: .*strides/) });
  });

  it('refuses a missing file, a non-JSON name and a path outside the workspace', async () => {
    await expect(readModelSpec(ws, 'models/none.json')).rejects.toThrow(/there is no model spec file models\/none.json/);
    await expect(readModelSpec(ws, 'workspace.txt')).rejects.toThrow(/"workspace.txt" is not a .json file/);
    await expect(readModelSpec(ws, '../../etc/x.json')).rejects.toThrow(/outside the workspace/);
  });

  it('parseModelSpec names the file in a JSON error', () => {
    expect(() => parseModelSpec('{', 'a.json')).toThrow(/model spec a.json is not valid JSON/);
  });

  it('says a spec nested 100,000 deep is nested too deep, not only that it is invalid (re-attack 9)', async () => {
    write('models/deep.json', `{"family":"mlp","input":[784],"outputs":10,"hidden":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    await expect(readModelSpec(ws, 'models/deep.json')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(/^model spec models\/deep.json is nested .*deep.*: not a model spec$/) });
    // A real one of the deepest family reads as before.
    expect(parseModelSpec(JSON.stringify({ family: 'mlp', input: [784], outputs: 10, hidden: [64, 32] }), 'b.json').family).toBe('mlp');
  });
});
