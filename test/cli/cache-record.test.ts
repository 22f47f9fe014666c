// `trainbench cache build dump --record layout`: one headerless file of interleaved records.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

async function trainbench(...args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args, '--workspace', ws.dir]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const LAYOUT = 'features:uint8:4,2,policy:float16:3,value:float16:';
const RECORD = 8 + 6 + 2;

describe('trainbench cache build --record', () => {
  it('splits an interleaved dump into one field per member', async () => {
    const dump = path.join(ws.dir, 'board.bin');
    writeFileSync(dump, Buffer.alloc(10 * RECORD, 3));
    const { code, stdout } = await trainbench('cache', 'build', dump, '--record', LAYOUT, '--name', 'interleaved', '--json');
    expect(code).toBe(0);
    const r = JSON.parse(stdout) as { dataset: { records: number; fields: { name: string; dtype: string; shape: number[] }[] } };
    expect(r.dataset.records).toBe(10);
    expect(r.dataset.fields.map((f) => `${f.name}:${f.dtype}:${f.shape.join(',')}`).join(',')).toBe(LAYOUT);
  });

  it('names the bad part of a layout', async () => {
    const dump = path.join(ws.dir, 'bad-layout.bin');
    writeFileSync(dump, Buffer.alloc(RECORD));
    const { code, stderr } = await trainbench('cache', 'build', dump, '--record', 'features:uint8:4,2,policy:float61:3', '--name', 'bad');
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/trainbench: record layout "features:uint8:4,2,policy:float61:3": member 'policy' has dtype "float61", not one of/);
  });

  it('names the file, its size and the record size when they do not divide', async () => {
    const dump = path.join(ws.dir, 'odd.bin');
    writeFileSync(dump, Buffer.alloc(RECORD + 5));
    const { code, stderr } = await trainbench('cache', 'build', dump, '--record', LAYOUT, '--name', 'odd');
    expect(code).not.toBe(0);
    expect(stderr).toContain(`trainbench: ${dump} is 21 bytes, not a whole number of 16-byte records (${LAYOUT}): check the record layout`);
  });

  it('takes exactly one file', async () => {
    const { code, stderr } = await trainbench('cache', 'build', 'a.bin', 'b.bin', '--record', LAYOUT, '--name', 'two');
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/trainbench: --record describes the records of one raw file, but 2 files were given/);
  });
});
