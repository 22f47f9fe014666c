// Re-attack 12 (issue 41, F3): a folder of the workspace swapped for a link between the check of a path and
// the read by it let serve mode read and list outside the workspace (datasets.csvHeader quoted /etc/passwd's
// first line, files.list listed /etc, datasets.inspect previewed its bytes). The swap is made at the exact
// moment between the check and the read, by wrapping node:fs's promise API, as confined-write-race does; the
// read must then be refused or read the folder checked, and never show what lies outside.
import { mkdirSync, promises as fsp, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { createServices, type Services } from '../../src-main/core/services';
import { tempDir } from '../helpers/temp-dir';

const SECRET = 'root:x:0:0:SECRET-LINE';

let t: { dir: string; cleanup(): void };
let out: { dir: string; cleanup(): void };
let services: Services;

beforeEach(async () => {
  t = tempDir();
  out = tempDir('trainbench-outside-');
  // The outside folder holds what a leak would show: a file of the same name, and names of its own.
  writeFileSync(path.join(out.dir, 'passwd'), `${SECRET}\n1\n`);
  writeFileSync(path.join(out.dir, 'outside-only-name'), 'x');
  mkdirSync(path.join(t.dir, 'sources', 'd'), { recursive: true });
  writeFileSync(path.join(t.dir, 'sources', 'd', 'passwd'), 'a,b\n1,2\n');
  services = await createServices({ workspaceDir: t.dir });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await services.dispose();
  t.cleanup();
  out.cleanup();
});

/** Moves sources/d aside (still inside) and puts a link to the outside folder at its name. */
function swapForLink(): void {
  renameSync(path.join(t.dir, 'sources', 'd'), path.join(t.dir, 'sources', 'd.moved'));
  symlinkSync(out.dir, path.join(t.dir, 'sources', 'd'));
}

/** Swaps the first time `method` of node:fs's promise API is called with a path `when` picks, then lets the call go on. */
function swapAt(method: 'open' | 'opendir', when: (p: string) => boolean): { swapped: () => boolean } {
  let swapped = false;
  const real = fsp[method].bind(fsp) as (...a: unknown[]) => Promise<unknown>;
  vi.spyOn(fsp, method).mockImplementation(((p: unknown, ...rest: unknown[]) => {
    if (!swapped && typeof p === 'string' && when(p)) {
      swapped = true;
      swapForLink();
    }
    return real(p, ...rest);
  }) as never);
  return { swapped: () => swapped };
}

/** The answer or the error, as text: whatever a page would be shown. */
async function shown(method: string, params: unknown): Promise<string> {
  try {
    return JSON.stringify(await services.router.dispatch(method as never, params as never));
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

describe('a folder swapped for a link between the check and the read', () => {
  it('datasets.csvHeader: refused, without a word of the file outside', async () => {
    const swap = swapAt('open', (p) => p.endsWith('passwd'));
    const text = await shown('datasets.csvHeader', { path: 'sources/d/passwd' });
    expect(swap.swapped()).toBe(true);
    expect(text).not.toContain('SECRET');
    expect(text).toMatch(/changed while it was opened \(swapped for a link\?\): not read/);
  });

  it('datasets.inspect of a raw source: refused, no byte of the file outside previewed', async () => {
    const swap = swapAt('open', (p) => p.endsWith('passwd'));
    const text = await shown('datasets.inspect', { source: { kind: 'raw', files: [{ path: 'sources/d/passwd', field: 'x', dtype: 'uint8', shape: [1] }] } });
    expect(swap.swapped()).toBe(true);
    // "root:" as the bytes a preview would show.
    expect(text).not.toContain('114,111,111,116');
    expect(text).toMatch(/changed while it was opened/);
  });

  it('files.list: lists the folder checked (moved aside, still inside), never the one the link leads to', async () => {
    const swap = swapAt('opendir', () => true);
    const text = await shown('files.list', { dir: 'sources/d' });
    expect(swap.swapped()).toBe(true);
    expect(text).not.toContain('outside-only-name');
    const listed = JSON.parse(text) as { entries: { name: string; bytes: number }[] };
    expect(listed.entries).toEqual([expect.objectContaining({ name: 'passwd', bytes: 8 })]);
  });

  it('a source reached through a link inside the workspace still imports: its real path is the one read', async () => {
    symlinkSync(path.join(t.dir, 'sources', 'd'), path.join(t.dir, 'sources', 'alias'));
    const header = (await services.router.dispatch('datasets.csvHeader', { path: 'sources/alias/passwd' })) as { columns: string[]; path: string };
    expect(header.columns).toEqual(['a', 'b']);
    expect(header.path).toBe('sources/alias/passwd');
  });
});
