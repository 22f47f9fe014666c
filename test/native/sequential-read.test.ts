// sequentialRead (the raw read bandwidth the loader benchmark compares against)
// reads through the engine's FileReader, which also opens UTF-8 paths on Windows.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import type { NativeError } from '../../src-main/engine/native-addon';
import { loadAddon } from '../helpers/native';
import { tempDir } from '../helpers/temp-dir';

const addon = loadAddon();
const t = tempDir('seq-read-');
afterAll(() => t.cleanup());

describe('sequentialRead', () => {
  it('counts every byte of each file: one larger than its 8 MiB buffer, an empty one, a non-ASCII name', async () => {
    const big = path.join(t.dir, 'big.bin');
    const empty = path.join(t.dir, 'empty.bin');
    const named = path.join(t.dir, 'Jürgen データ.bin');
    writeFileSync(big, Buffer.alloc((8 << 20) * 2 + 12345, 7));
    writeFileSync(empty, Buffer.alloc(0));
    writeFileSync(named, Buffer.alloc(1000, 1));
    const r = await addon.sequentialRead([big, empty, named]);
    expect(r.bytes).toBe((8 << 20) * 2 + 12345 + 1000);
    expect(r.mbPerSec).toBeGreaterThan(0);
  });

  it('names the file that does not open and says why, as E_BAD_INPUT', async () => {
    const missing = path.join(t.dir, 'no-such.bin');
    const err = (await addon.sequentialRead([missing]).then(
      () => null,
      (e: NativeError) => e,
    )) as NativeError;
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toBe(`cannot open ${missing}: No such file or directory`);
  });
});
