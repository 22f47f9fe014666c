// Re-check of issue 41's F3 (2026-12-07): a name Trainbench creates in a folder of its own (a dataset's shard, a
// run's checkpoint), taken meanwhile by a link, file or folder someone put there, was answered E_INTERNAL with a bare
// "EEXIST". It is refused as data, saying what happened, and what was put there is left as it is.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { ApiError } from '../../src-main/api/errors';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { createFile, writtenByAnotherProcess } from '../../src-main/core/workspace/workspace-files';
import { tempDir } from '../helpers/temp-dir';

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

const dirs = () => {
  const t = tempDir();
  const out = tempDir('trainbench-outside-');
  cleanups.push(t.cleanup, out.cleanup);
  return { t, out };
};
const refusal = (shown: string) => `${shown} exists already: something was put there while Trainbench wrote this folder; it is not written over`;

describe('a name taken in a folder Trainbench writes', () => {
  it('a shard: a link planted at its name is refused as data, and what it points at is untouched', async () => {
    const { t, out } = dirs();
    const ws = await openWorkspace(t.dir);
    mkdirSync(path.join(t.dir, 'datasets', '.tmp-x'), { recursive: true });
    writeFileSync(path.join(out.dir, 'target'), 'ORIGINAL');
    symlinkSync(path.join(out.dir, 'target'), path.join(t.dir, 'datasets', '.tmp-x', 'shard-00001.bin'));
    const err = await createFile(ws, 'datasets/.tmp-x/shard-00001.bin').then(
      () => null,
      (e: ApiError) => e,
    );
    expect(err && { code: err.code, message: err.message }).toEqual({ code: 'E_DATA', message: refusal('datasets/.tmp-x/shard-00001.bin') });
    expect(readFileSync(path.join(out.dir, 'target'), 'utf8')).toBe('ORIGINAL');
  });

  it('a checkpoint: a folder put at its name while the engine saved is refused as data', async () => {
    const { t } = dirs();
    const ws = await openWorkspace(t.dir);
    mkdirSync(path.join(t.dir, 'runs', 'r1', 'checkpoint.safetensors'), { recursive: true });
    const err = await writtenByAnotherProcess(ws, 'runs/r1/checkpoint.safetensors', async (staged) => writeFileSync(staged, 'weights')).then(
      () => null,
      (e: ApiError) => e,
    );
    expect(err && { code: err.code, message: err.message }).toEqual({ code: 'E_DATA', message: refusal('runs/r1/checkpoint.safetensors') });
  });
});
