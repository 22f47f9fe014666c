// The last guard on every answer (toApiError): a file system's refusal that no write path worded itself is E_DATA
// in words naming the file, never E_INTERNAL with an errno and a temp name (third re-attack of issue 41). Real
// refusals from real calls: a path under a file, and, as root, a folder made immutable.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, openSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { toApiError } from '../../src-main/api/errors';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { makeFolderExclusive } from '../../src-main/core/workspace/workspace-files';
import { tempDir } from '../helpers/temp-dir';

const t = tempDir();
const frozen: string[] = [];
afterAll(() => {
  for (const dir of frozen) execFileSync('chattr', ['-i', dir]);
  t.cleanup();
});

/** What a call threw. */
function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (err) {
    return err;
  }
  throw new Error('it did not throw');
}

describe('toApiError on a file system refusal', () => {
  it('words a path under a file, naming it relative to the workspace', () => {
    writeFileSync(path.join(t.dir, 'afile'), 'x');
    const err = toApiError(thrown(() => mkdirSync(path.join(t.dir, 'afile', 'x'))));
    expect(err.code).toBe('E_DATA');
    expect(err.toPayload(t.dir).message).toBe('afile/x: a part of its path is a file, not a folder');
    // Outside the workspace, an answer names the last part only, as an unexpected error's does.
    expect(err.toPayload(path.join(t.dir, 'elsewhere')).message).toBe('…/x: a part of its path is a file, not a folder');
  });

  it('leaves anything else as it was: an unexpected error, its message kept', () => {
    expect(toApiError(new TypeError('x is not a function'))).toMatchObject({ code: 'E_INTERNAL', message: 'x is not a function' });
    // An errno without a system call or a path is not the file system's, nor is a spawn's (its path is the command).
    expect(toApiError(Object.assign(new Error('EPERM: made up'), { code: 'EPERM' }))).toMatchObject({ code: 'E_INTERNAL' });
    const notExecutable = path.join(t.dir, 'not-executable.sh');
    writeFileSync(notExecutable, '#!/bin/sh\n', { mode: 0o644 });
    const spawned = spawnSync(notExecutable).error as NodeJS.ErrnoException;
    expect(spawned).toMatchObject({ code: 'EACCES', path: notExecutable });
    expect(toApiError(spawned)).toMatchObject({ code: 'E_INTERNAL' });
  });

  const root = process.getuid?.() === 0;
  it.skipIf(!root)(root ? 'names the file a temp file stood for, and a working name by its folder, in an immutable folder' : 'in an immutable folder: skipped (chattr needs root)', async () => {
    const dir = path.join(t.dir, 'reports');
    mkdirSync(dir);
    try {
      execFileSync('chattr', ['+i', dir], { stdio: 'ignore' });
    } catch {
      return; // a file system without the attribute: nothing to refuse here
    }
    frozen.push(dir);
    const temp = toApiError(thrown(() => openSync(path.join(dir, '.0001-x.md.0123456789ab.tmp'), 'wx')));
    expect(temp.code).toBe('E_DATA');
    expect(temp.toPayload(t.dir).message).toBe('reports/0001-x.md: the file system refused the change (a file made immutable, or held by another program)');
    const claim = toApiError(thrown(() => mkdirSync(path.join(dir, '.claim-0002'))));
    expect(claim.toPayload(t.dir).message).toBe('reports/: the file system refused the change (a file made immutable, or held by another program)');
    // Through a held folder (/proc/self/fd/N/ on Linux): still named by the folder, not "…/N" (fourth re-attack).
    const ws = await openWorkspace(t.dir);
    const held = toApiError(await makeFolderExclusive(ws, 'reports/.claim-0003').catch((e: unknown) => e));
    expect(held.toPayload(t.dir).message).toBe('reports/: the file system refused the change (a file made immutable, or held by another program)');
  });

  it.skipIf(!root)(root ? 'words a folder that is a mount point, which cannot be renamed away (EBUSY)' : 'a mount point: skipped (mount needs root)', () => {
    const mounted = path.join(t.dir, 'mounted');
    mkdirSync(mounted);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mounted], { stdio: 'ignore' });
    } catch {
      return;
    }
    try {
      const busy = toApiError(thrown(() => renameSync(mounted, path.join(t.dir, '.removing-mounted'))));
      expect(busy.code).toBe('E_DATA');
      expect(busy.toPayload(t.dir).message).toBe('mounted: it is in use (a mount point, or held open by another program)');
    } finally {
      execFileSync('umount', [mounted]);
    }
  });
});
