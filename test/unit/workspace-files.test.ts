// core/workspace-files.ts, the one way the services touch a workspace file: each
// rule against the planted file it exists for (issue 23).
import { execFileSync, spawnSync } from 'node:child_process';
import { linkSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { Workspace } from '../../src-main/core/workspace/workspace';
import { readRunTelemetryCut } from '../../src-main/core/workspace/run-telemetry';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import {
  copyFileOut,
  createFileWriteStream,
  listFolder,
  listFolderBounded,
  makeFolder,
  readJsonCapped,
  readTail,
  readTextCapped,
  removeEntry,
  writeFileConfined,
} from '../../src-main/core/workspace/workspace-files';
import { tempDir } from '../helpers/temp-dir';

const repoRoot = path.resolve(__dirname, '../..');
/** Opens /dev/null until the process has no handle left, frees none, and reads a workspace file (argv[1] the workspace). */
const EXHAUST_THEN_READ = `
const fs = require('node:fs');
const { openWorkspace } = require('./dist/src-main/core/workspace/workspace');
const { readTextCapped } = require('./dist/src-main/core/workspace/workspace-files');
openWorkspace(process.argv[1]).then(async (ws) => {
  try { for (;;) fs.openSync('/dev/null', 'r'); } catch (err) { if (err.code !== 'EMFILE') throw err; }
  await readTextCapped(ws, 'runs/a.json', 1024).then(() => console.log('read'), (err) => console.log(err.message));
});`;

let t: { dir: string; cleanup(): void };
let out: { dir: string; cleanup(): void };
let ws: Workspace;
const secret = () => path.join(out.dir, 'secret');

beforeEach(async () => {
  t = tempDir();
  out = tempDir('trainbench-outside-');
  writeFileSync(secret(), 'SECRET\n');
  ws = await openWorkspace(t.dir);
});
afterEach(() => {
  t.cleanup();
  out.cleanup();
});

const at = (...p: string[]) => path.join(t.dir, ...p);

describe('reading', () => {
  it('reads a regular file, and refuses a link (even one inside the workspace), a FIFO and a folder, naming the file', async () => {
    writeFileSync(at('runs', 'a.json'), '{"x": 1}');
    expect(await readJsonCapped(ws, 'runs/a.json', 1024)).toEqual({ x: 1 });
    symlinkSync(secret(), at('runs', 'out.json'));
    symlinkSync(at('runs', 'a.json'), at('runs', 'in.json'));
    execFileSync('mkfifo', [at('runs', 'fifo')]);
    // One leading outside is refused by its real path before it is opened (as a request's path would be).
    await expect(readTextCapped(ws, 'runs/out.json', 1024)).rejects.toMatchObject({ message: expect.stringContaining('leads outside the workspace through a link') });
    await expect(readTextCapped(ws, 'runs/in.json', 1024)).rejects.toMatchObject({ problem: 'link', message: 'runs/in.json is a link: workspace files are read only as themselves, never through a link' });
    // Without O_NONBLOCK this open would wait for a writer forever.
    await expect(readTextCapped(ws, 'runs/fifo', 1024)).rejects.toMatchObject({ problem: 'not-a-file', message: expect.stringContaining('runs/fifo is a FIFO') });
    await expect(readTextCapped(ws, 'runs', 1024)).rejects.toMatchObject({ problem: 'not-a-file' });
    await expect(readTextCapped(ws, 'runs/missing.json', 1024)).rejects.toMatchObject({ code: 'E_BAD_INPUT', problem: 'missing' });
  });

  it('says in words why a file cannot be opened: a socket at its name, a file where a folder should be, no file handles left', async () => {
    // A socket's open fails with ENXIO: said as what is there, not as the errno (fifth re-attack of issue 41).
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(at('runs', 'sock.json'), resolve));
    try {
      await expect(readTextCapped(ws, 'runs/sock.json', 1024)).rejects.toMatchObject({
        problem: 'unreadable',
        message: 'runs/sock.json cannot be opened: it is a socket, a FIFO nobody reads or a device with nothing behind it, not a regular file',
      });
    } finally {
      server.close();
    }
    // A run folder that is a file: still missing to its callers, but not said to "not exist" (it does).
    writeFileSync(at('runs', 'r1'), 'x');
    await expect(readTextCapped(ws, 'runs/r1/run.json', 1024)).rejects.toMatchObject({
      problem: 'missing',
      message: 'runs/r1/run.json cannot be reached: a part of its path is a file, not a folder',
    });
    // Out of file handles (EMFILE), in a child with a low limit, through the built module: a wait, not an errno.
    writeFileSync(at('runs', 'a.json'), '{}');
    const child = spawnSync('prlimit', ['--nofile=64', process.execPath, '-e', EXHAUST_THEN_READ, t.dir], { encoding: 'utf8', cwd: repoRoot });
    expect(child.stderr).toBe('');
    expect(child.stdout.trim()).toBe('runs/a.json cannot be opened: Trainbench has too many files open at once right now; try again when the work in progress has finished');
  });

  it('refuses a file over its cap by its size, without reading it, and a parse error quotes no text', async () => {
    writeFileSync(at('big'), '');
    truncateSync(at('big'), 3 * 1024 * 1024 * 1024); // sparse
    await expect(readTextCapped(ws, 'big', 16 * 1024 * 1024)).rejects.toMatchObject({ problem: 'too-large', message: 'big is 3072.0 MiB, more than the 16.0 MiB this reads: not read' });
    writeFileSync(at('bad.json'), '{"key": SECRET}');
    const err = await readJsonCapped(ws, 'bad.json', 1024).catch((e: Error) => e);
    expect(err).toMatchObject({ problem: 'not-json', message: 'bad.json is not valid JSON' });
    writeFileSync(at('cut.json'), '{"key": [1, 2');
    await expect(readJsonCapped(ws, 'cut.json', 1024)).rejects.toMatchObject({ message: expect.stringMatching(/^cut.json is not valid JSON/) });
  });

  it('reads at most the window from the end of a log, from its first whole line', async () => {
    writeFileSync(at('log'), '');
    truncateSync(at('log'), 512 * 1024 * 1024);
    writeFileSync(at('log'), 'a'.repeat(100) + '\nlast line\n', { flag: 'a' });
    expect(await readTail(ws, 'log', 64)).toBe('last line\n');
  });
});

describe('writing', () => {
  it('replaces a planted link with the new file, never writing through it', async () => {
    symlinkSync(secret(), at('reports', 'r.md'));
    await writeFileConfined(ws, 'reports/r.md', 'new text');
    expect(readFileSync(secret(), 'utf8')).toBe('SECRET\n');
    expect(lstatSync(at('reports', 'r.md')).isSymbolicLink()).toBe(false);
    expect(readFileSync(at('reports', 'r.md'), 'utf8')).toBe('new text');
  });

  it('refuses to write into a folder that is a link leading out', async () => {
    symlinkSync(out.dir, at('reports', 'out'));
    await expect(writeFileConfined(ws, 'reports/out/r.md', 'x')).rejects.toMatchObject({ code: 'E_BAD_INPUT' });
    await expect(makeFolder(ws, 'reports/out/deeper')).rejects.toMatchObject({ code: 'E_BAD_INPUT' });
  });

  it('copies out of the workspace reading the source as itself and replacing a link at the destination', async () => {
    writeFileSync(at('reports', 'r.md'), 'report');
    mkdirSync(at('exports'));
    symlinkSync(secret(), at('exports', 'r.md'));
    await copyFileOut(ws, 'reports/r.md', at('exports', 'r.md'));
    expect(readFileSync(secret(), 'utf8')).toBe('SECRET\n');
    expect(readFileSync(at('exports', 'r.md'), 'utf8')).toBe('report');
    symlinkSync(secret(), at('reports', 'leak.md'));
    await expect(copyFileOut(ws, 'reports/leak.md', at('exports', 'leak.md'))).rejects.toMatchObject({ code: 'E_BAD_INPUT' });
  });

  it('opens a run file for appending only as itself: a link or a FIFO at its name is refused', async () => {
    mkdirSync(at('runs', 'r'));
    symlinkSync(secret(), at('runs', 'r', 'events.jsonl'));
    expect(() => createFileWriteStream(ws, 'runs/r/events.jsonl', { append: true })).toThrow(/link/);
    execFileSync('mkfifo', [at('runs', 'r', 'telemetry.jsonl')]);
    expect(() => createFileWriteStream(ws, 'runs/r/telemetry.jsonl', { append: true })).toThrow(/runs\/r\/telemetry.jsonl/);
    expect(readFileSync(secret(), 'utf8')).toBe('SECRET\n');
  });

  it('a telemetry.jsonl that links outside leaves the run shown without telemetry, as one linking inside does (attack round 8)', async () => {
    mkdirSync(at('runs', 'r'));
    writeFileSync(at('runs', 'r', 'inside.jsonl'), '{}\n');
    for (const target of [secret(), at('runs', 'r', 'inside.jsonl')]) {
      rmSync(at('runs', 'r', 'telemetry.jsonl'), { force: true });
      symlinkSync(target, at('runs', 'r', 'telemetry.jsonl'));
      await expect(readTextCapped(ws, 'runs/r/telemetry.jsonl', 1 << 20)).rejects.toMatchObject({ problem: 'link', message: expect.stringMatching(/runs\/r\/telemetry\.jsonl.* link/) });
      expect(await readRunTelemetryCut(ws, 'r')).toEqual({ samples: [], cut: [] });
    }
    // A link at a folder on the way still says it leads outside.
    symlinkSync(out.dir, at('runs', 'out'));
    await expect(readTextCapped(ws, 'runs/out/secret', 1 << 20)).rejects.toThrow('path "runs/out/secret" leads outside the workspace through a link');
  });

  it('does not append through a hard link to a file outside the workspace', async () => {
    mkdirSync(at('runs', 'r'));
    linkSync(secret(), at('runs', 'r', 'telemetry.jsonl'));
    expect(() => createFileWriteStream(ws, 'runs/r/telemetry.jsonl', { append: true })).toThrow(/runs\/r\/telemetry\.jsonl has 2 names \(hard links\)/);
    expect(readFileSync(secret(), 'utf8')).toBe('SECRET\n');
  });

  it('removes a folder tree through its own handles: links inside are removed as links, their targets kept', async () => {
    mkdirSync(at('runs', 'r', 'a', 'b'), { recursive: true });
    writeFileSync(at('runs', 'r', 'a', 'b', 'events.jsonl'), '{}\n');
    symlinkSync(out.dir, at('runs', 'r', 'a', 'out'));
    symlinkSync(secret(), at('runs', 'r', 'a', 'b', 'secret'));
    await removeEntry(ws, 'runs/r');
    expect(() => lstatSync(at('runs', 'r'))).toThrow();
    expect(readFileSync(secret(), 'utf8')).toBe('SECRET\n');
  });

  it('refuses to remove folders nested deeper than it holds handles for, naming the folder', async () => {
    const deep = ['runs', 'deep', ...Array.from({ length: 300 }, () => 'd')];
    mkdirSync(at(...deep), { recursive: true });
    await expect(removeEntry(ws, 'runs/deep')).rejects.toThrow(/runs\/deep(\/d)+ holds folders nested more than 256 deep: not removed/);
  });

  it('removes a link as the link, leaving its target', async () => {
    symlinkSync(out.dir, at('datasets', 'planted'));
    await removeEntry(ws, 'datasets/planted');
    expect(readFileSync(secret(), 'utf8')).toBe('SECRET\n');
    expect(() => lstatSync(at('datasets', 'planted'))).toThrow();
  });
});

describe('listing', () => {
  it('gives each entry its own kind, links and special files included, without following them', async () => {
    mkdirSync(at('runs', 'dir'));
    writeFileSync(at('runs', 'file'), 'x');
    symlinkSync(out.dir, at('runs', 'link'));
    execFileSync('mkfifo', [at('runs', 'fifo')]);
    expect(await listFolder(ws, 'runs')).toEqual([
      { name: 'dir', kind: 'dir', bytes: 0 },
      { name: 'fifo', kind: 'other', bytes: 0 },
      { name: 'file', kind: 'file', bytes: 1 },
      { name: 'link', kind: 'link', bytes: 0 },
    ]);
    expect(await listFolder(ws, 'missing')).toEqual([]);
  });

  it('keeps a bounded number of entries and counts the rest up to a bound, so a planted folder of millions costs bounded memory and time', async () => {
    mkdirSync(at('runs', 'many'));
    // Written in reverse: a folder's read order follows no name order (ext4 hashes them), and the test must not lean on one.
    for (let i = 299; i >= 0; i--) writeFileSync(at('runs', 'many', `r${String(i).padStart(3, '0')}`), '');
    const whole = await listFolderBounded(ws, 'runs/many', { keep: 100, scan: 1000 });
    expect(whole.entries).toHaveLength(100);
    expect(whole).toMatchObject({ omitted: 200, omittedAtLeast: false });
    // The first names in order, not the first the folder happens to read.
    expect(whole.entries.map((e) => e.name)).toEqual(Array.from({ length: 100 }, (_, i) => `r${String(i).padStart(3, '0')}`));
    expect(await listFolderBounded(ws, 'runs/many', { keep: 100, scan: 150 })).toMatchObject({ omitted: 150, omittedAtLeast: true });
    expect(await listFolderBounded(ws, 'runs/many', { keep: 300, scan: 10 })).toMatchObject({ omitted: 0, omittedAtLeast: false });
  });
});
