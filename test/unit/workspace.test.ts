import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { defaultWorkspaceDir, openWorkspace, resolveInside } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));
function scratch(): string {
  const t = tempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}

describe('workspace', () => {
  it('refuses a path longer than any file system takes, without echoing all of it (it surfaced as E_INTERNAL ENAMETOOLONG)', () => {
    const root = scratch();
    const long = 'a'.repeat(20_000);
    expect(() => resolveInside(root, long)).toThrow(expect.objectContaining({ code: 'E_BAD_INPUT', message: expect.stringContaining('20000 characters long') }));
    try {
      resolveInside(root, long);
    } catch (err) {
      expect((err as Error).message.length).toBeLessThan(200);
    }
  });

  it('creates the layout and a schema-versioned marker', async () => {
    const dir = path.join(scratch(), 'ws');
    const ws = await openWorkspace(dir);
    for (const sub of ['datasets', 'runs', 'reports']) expect(existsSync(path.join(dir, sub))).toBe(true);
    expect(JSON.parse(readFileSync(path.join(dir, 'workspace.json'), 'utf8'))).toMatchObject({ schemaVersion: 1 });
    expect(ws.resolve('runs/abc/run.json')).toBe(path.join(dir, 'runs', 'abc', 'run.json'));
  });

  it('refuses a workspace written by a newer Trainbench', async () => {
    const dir = scratch();
    writeFileSync(path.join(dir, 'workspace.json'), JSON.stringify({ schemaVersion: 99 }));
    await expect(openWorkspace(dir)).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringContaining('99') });
  });

  it('refuses a path that is a file, naming it', async () => {
    const file = path.join(scratch(), 'not-a-dir');
    writeFileSync(file, 'x');
    await expect(openWorkspace(file)).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining(file) });
  });

  it.each(['../escape', 'runs/../../escape', '/etc/passwd', 'a\0b'])('refuses %j as outside the workspace', (rel) => {
    const root = scratch();
    expect(() => resolveInside(root, rel)).toThrowError(expect.objectContaining({ code: 'E_BAD_INPUT' }));
  });

  it('allows names that merely start with dots', () => {
    const root = scratch();
    expect(resolveInside(root, '..hidden')).toBe(path.join(root, '..hidden'));
  });

  it('follows links: a link inside that leads outside is refused, and says so', () => {
    const root = scratch();
    const outside = scratch();
    mkdirSync(path.join(root, 'sources'));
    writeFileSync(path.join(outside, 'secret.bin'), 'x');
    symlinkSync(outside, path.join(root, 'sources', 'etc'));
    symlinkSync(path.join(outside, 'secret.bin'), path.join(root, 'sources', 'leak.bin'));
    for (const rel of ['sources/etc', 'sources/etc/secret.bin', 'sources/etc/not-yet/new.bin', 'sources/leak.bin']) {
      expect(() => resolveInside(root, rel), rel).toThrowError(
        expect.objectContaining({ code: 'E_BAD_INPUT', message: expect.stringContaining('leads outside the workspace through a link') }),
      );
    }
  });

  it('refuses a dangling link whose target would be created outside', () => {
    const root = scratch();
    const outside = scratch();
    symlinkSync(path.join(outside, 'to-be-made'), path.join(root, 'later'));
    expect(() => resolveInside(root, 'later/file.bin')).toThrowError(expect.objectContaining({ code: 'E_BAD_INPUT' }));
  });

  it('refuses a chain of dangling links naming thousands of folders, and a loop, in words without a path: no stack overflow, no long walk (eighth re-attack of issue 41)', () => {
    const root = scratch();
    const outside = scratch();
    mkdirSync(path.join(root, 'deep'));
    // L0 -> L1/x/x/…/x (1,900 parts), L1 -> L2/x/…, and so on: followed a part at a time, recursively, it overflowed the stack.
    const xs = Array.from({ length: 1_900 }, () => 'x').join('/');
    for (let k = 0; k < 8; k++) symlinkSync(`L${k + 1}/${xs}`, path.join(root, 'deep', `L${k}`));
    expect(() => resolveInside(root, 'deep/L0/a')).toThrowError(
      expect.objectContaining({ code: 'E_BAD_INPUT', message: 'path "deep/L0/a" cannot be followed: it names more than 256 folders once its links are followed' }),
    );
    // Links whose expansion is longer than any path: the kernel follows them on (to /etc here) where a walk that took
    // a too-long name as a plain one stopped inside the workspace (ninth re-attack).
    const chain = (name: string) => path.join(root, name, ...Array.from({ length: 11 }, () => 'b'.repeat(200)));
    mkdirSync(chain('c1'), { recursive: true });
    mkdirSync(chain('c2'), { recursive: true });
    symlinkSync(chain('c1'), path.join(root, 's1'));
    symlinkSync(chain('c2'), path.join(chain('c1'), 's2'));
    symlinkSync('/etc', path.join(chain('c2'), 'esc'));
    expect(() => resolveInside(root, 's1/s2/esc/passwd')).toThrowError(
      expect.objectContaining({ code: 'E_BAD_INPUT', message: expect.stringMatching(/^path "s1\/s2\/esc\/passwd" (leads outside the workspace through a link|cannot be followed: it is longer than 4096 bytes)/) }),
    );
    // A loop outside the workspace is refused without naming where it is.
    symlinkSync(path.join(outside, 'b'), path.join(outside, 'a'));
    symlinkSync(path.join(outside, 'a'), path.join(outside, 'b'));
    symlinkSync(path.join(outside, 'a'), path.join(root, 'loop.json'));
    expect(() => resolveInside(root, 'loop.json')).toThrowError(
      expect.objectContaining({ code: 'E_BAD_INPUT', message: 'path "loop.json" cannot be followed: it goes through more than 40 links (a loop?)' }),
    );
    // A missing folder followed by "..": walked as the kernel would, back into what exists.
    mkdirSync(path.join(root, 'sources'));
    expect(resolveInside(root, 'sources/missing/../a.csv')).toBe(path.join(root, 'sources', 'a.csv'));
  });

  it('allows links that stay inside, and a workspace reached through a link', () => {
    const real = scratch();
    mkdirSync(path.join(real, 'sources', 'data'), { recursive: true });
    symlinkSync(path.join(real, 'sources', 'data'), path.join(real, 'sources', 'alias'));
    const viaLink = path.join(scratch(), 'ws-link');
    symlinkSync(real, viaLink);
    expect(resolveInside(real, 'sources/alias/a.npy')).toBe(path.join(real, 'sources', 'alias', 'a.npy'));
    expect(resolveInside(viaLink, 'sources/data/a.npy')).toBe(path.join(viaLink, 'sources', 'data', 'a.npy'));
  });

  it('defaults to <user-data>/workspace on each platform', () => {
    expect(defaultWorkspaceDir('linux', {}, '/home/ada')).toBe('/home/ada/.config/Trainbench/workspace');
    expect(defaultWorkspaceDir('linux', { XDG_CONFIG_HOME: '/x' }, '/home/ada')).toBe('/x/Trainbench/workspace');
    expect(defaultWorkspaceDir('win32', { APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, 'C:\\Users\\ada')).toBe(
      'C:\\Users\\ada\\AppData\\Roaming\\Trainbench\\workspace',
    );
    expect(defaultWorkspaceDir('darwin', {}, '/Users/ada')).toBe('/Users/ada/Library/Application Support/Trainbench/workspace');
    expect(defaultWorkspaceDir('linux', { TRAINBENCH_WORKSPACE: '/data/tb' }, '/home/ada')).toBe('/data/tb');
  });
});
