// The built-in example's positions take seconds to make on a small machine: the
// generator reports how far it is, and the CLI draws that as a bar.
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { formatBuild } from '../../src-main/cli/progress-bar';
import { writeBoardDumps } from '../../src-main/core/datasets/example-board';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

describe('example board generation', () => {
  it('reports records and bytes as it writes the dumps, ending at the whole size', async () => {
    const t = tempDir();
    try {
      const ws = await openWorkspace(t.dir);
      const seen: [number, number, number][] = [];
      const spec = await writeBoardDumps(ws, 2500, 3, { onProgress: (r, b, total) => seen.push([r, b, total]) });
      expect(seen.length).toBe(3); // chunks of 1,024 records
      expect(seen.map((s) => s[0])).toEqual([1024, 2048, 2500]);
      const total = seen[0][2];
      expect(seen.every((s) => s[2] === total)).toBe(true);
      expect(seen.at(-1)![1]).toBe(total);
      const files = spec.kind === 'raw' ? spec.files : [];
      expect(files.reduce((a, f) => a + statSync(f.path).size, 0)).toBe(total);
      // A second call finds the finished dumps and makes nothing.
      const again: number[] = [];
      await writeBoardDumps(ws, 2500, 3, { onProgress: (r) => again.push(r) });
      expect(again).toEqual([]);
      expect(path.basename(path.dirname(files[0].path))).toBe('board-2500-seed3');
    } finally {
      t.cleanup();
    }
  });

  it('waits for each full stream without leaving listeners on it (no MaxListenersExceededWarning past 10 waits)', async () => {
    const t = tempDir();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const ws = await openWorkspace(t.dir);
      // 12 chunks of 1,024 records, each far over a stream's buffer: at least 12 waits per file.
      await writeBoardDumps(ws, 12 * 1024, 5);
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      t.cleanup();
    }
  });

  it('cancelled mid-way, ends with E_CANCELLED and leaves neither its temp files nor an unhandled stream error', async () => {
    const t = tempDir();
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('uncaughtException', onError);
    try {
      const ws = await openWorkspace(t.dir);
      const ac = new AbortController();
      const done = writeBoardDumps(ws, 20_000, 4, { signal: ac.signal, onProgress: (r) => r >= 2048 && ac.abort() });
      await expect(done).rejects.toMatchObject({ code: 'E_CANCELLED' });
      await new Promise((resolve) => setTimeout(resolve, 200)); // a destroyed stream's pending write reports late
      expect(errors).toEqual([]);
      expect(readdirSync(path.join(t.dir, 'sources', 'board-20000-seed4'))).toEqual([]);
    } finally {
      process.off('uncaughtException', onError);
      t.cleanup();
    }
  });

  it("replaces a link planted at a dump's name instead of writing through it (issue 23)", async () => {
    const t = tempDir();
    const outside = tempDir('trainbench-outside-');
    try {
      writeFileSync(path.join(outside.dir, 'profile'), 'original');
      const dir = path.join(t.dir, 'sources', 'board-100-seed1');
      mkdirSync(dir, { recursive: true });
      symlinkSync(path.join(outside.dir, 'profile'), path.join(dir, 'features.npy'));
      const ws = await openWorkspace(t.dir);
      await writeBoardDumps(ws, 100, 1);
      expect(readFileSync(path.join(outside.dir, 'profile'), 'utf8')).toBe('original');
      expect(lstatSync(path.join(dir, 'features.npy')).isSymbolicLink()).toBe(false);
      // Marked finished, with a dump swapped for a link: made again, not trusted.
      rmSync(path.join(dir, 'value.npy'));
      symlinkSync(path.join(outside.dir, 'profile'), path.join(dir, 'value.npy'));
      const made: number[] = [];
      await writeBoardDumps(ws, 100, 1, { onProgress: (r) => made.push(r) });
      expect(made).toEqual([100]);
      expect(lstatSync(path.join(dir, 'value.npy')).isSymbolicLink()).toBe(false);
    } finally {
      t.cleanup();
      outside.cleanup();
    }
  });

  it('draws generating progress with its own label', () => {
    const line = formatBuild({ jobId: 'j', phase: 'generating', records: 512, recordsTotal: 2048, bytesWritten: 1e6, bytesTotal: 4e6, bytesPerSec: 2e6, etaSeconds: 1.5 }, 10);
    expect(line).toMatch(/^generating example .* 25% 512\/2,048 records 2 MB\/s ETA/);
  });
});
