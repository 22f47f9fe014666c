// Issue 41, F3: a confined write checks its folder, then writes. A local process that can write
// the workspace swaps that folder (or any above it) for a link to elsewhere in between: the write
// must land inside the workspace or be refused, naming the link, and never land outside.
// The swap is made at the exact moment between the check and the write (when the temp file, the
// new file or the new folder is created), by wrapping node:fs's promise API; a last test races a
// real second thread swapping back and forth.
import { existsSync, lstatSync, mkdirSync, promises as fsp, readdirSync, readFileSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { heldFolderTesting } from '../../src-main/core/workspace/held-folder';
import { saveModelSpec } from '../../src-main/core/workspace/model-files';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { copyFileOut, createFile, makeFolder, makeFolderExclusive, writeFileConfined, writeNewFileConfined } from '../../src-main/core/workspace/workspace-files';
import { tempDir } from '../helpers/temp-dir';

let t: { dir: string; cleanup(): void };
let out: { dir: string; cleanup(): void };
let ws: Workspace;

beforeEach(async () => {
  t = tempDir();
  out = tempDir('trainbench-outside-');
  ws = await openWorkspace(t.dir);
});
afterEach(() => {
  vi.restoreAllMocks();
  heldFolderTesting.withoutProcFd = false;
  t.cleanup();
  out.cleanup();
});

const at = (...p: string[]) => path.join(t.dir, ...p);

/** Every file and folder below the outside folder (what a write that escaped left there). */
function outside(dir = out.dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? [path.relative(out.dir, p) + '/', ...outside(p)] : [path.relative(out.dir, p)];
  });
}

/** Moves the workspace folder `rel` aside (to `<rel>.moved`, still inside) and puts a link to the outside folder at its name. */
function swapForLink(rel: string): void {
  renameSync(at(rel), at(`${rel}.moved`));
  symlinkSync(out.dir, at(rel));
}

/** Makes the swap the first time `method` of node:fs's promise API is called with a path that `when` picks, then lets the call go on. */
function swapAt(method: 'open' | 'mkdir', when: (p: string) => boolean, rel: string): { swapped: () => boolean } {
  let swapped = false;
  const real = fsp[method].bind(fsp) as (...a: unknown[]) => Promise<unknown>;
  vi.spyOn(fsp, method).mockImplementation(((p: unknown, ...rest: unknown[]) => {
    if (!swapped && typeof p === 'string' && when(p)) {
      swapped = true;
      swapForLink(rel);
    }
    return real(p, ...rest);
  }) as never);
  return { swapped: () => swapped };
}

const isTemp = (p: string) => /\.tmp$/.test(path.basename(p));
const spec = { family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [8] };

describe('a folder swapped for a link between the check and the write', () => {
  it('writeFileConfined: the file lands in the folder checked, never through the link', async () => {
    mkdirSync(at('reports', 'r'));
    const swap = swapAt('open', isTemp, 'reports');
    await writeFileConfined(ws, 'reports/r/r.md', 'report');
    expect(swap.swapped()).toBe(true);
    expect(outside()).toEqual([]);
    expect(readFileSync(at('reports.moved', 'r', 'r.md'), 'utf8')).toBe('report');
  });

  it('copyFileOut into the workspace (serve mode\'s report export): the copy lands in the folder checked', async () => {
    mkdirSync(at('reports', 'r'), { recursive: true });
    mkdirSync(at('exp', 'out0'), { recursive: true });
    await writeFileConfined(ws, 'reports/r/r.md', 'report');
    const swap = swapAt('open', isTemp, 'exp');
    await copyFileOut(ws, 'reports/r/r.md', at('exp', 'out0', 'r.md'));
    expect(swap.swapped()).toBe(true);
    expect(outside()).toEqual([]);
    expect(readFileSync(at('exp.moved', 'out0', 'r.md'), 'utf8')).toBe('report');
  });

  it('models.save (new and replaced): the spec stays inside the workspace', async () => {
    await makeFolder(ws, 'models');
    const first = swapAt('open', isTemp, 'models');
    await saveModelSpec(ws, { name: 'mine', spec, overwrite: false } as never);
    expect(first.swapped()).toBe(true);
    expect(outside()).toEqual([]);
    expect(JSON.parse(readFileSync(at('models.moved', 'mine.json'), 'utf8'))).toMatchObject({ family: 'mlp' });

    vi.restoreAllMocks();
    unlinkSync(at('models'));
    renameSync(at('models.moved'), at('models'));
    const again = swapAt('open', isTemp, 'models');
    await saveModelSpec(ws, { name: 'mine', spec: { ...spec, hidden: [16] }, overwrite: true } as never);
    expect(again.swapped()).toBe(true);
    expect(outside()).toEqual([]);
    expect(JSON.parse(readFileSync(at('models.moved', 'mine.json'), 'utf8'))).toMatchObject({ hidden: [16] });
  });

  it('a link anywhere above the folder counts, not just its last component', async () => {
    mkdirSync(at('runs', 'r1'));
    mkdirSync(path.join(out.dir, 'r1')); // so that the path still resolves through the link
    const swap = swapAt('open', isTemp, 'runs');
    await writeNewFileConfined(ws, 'runs/r1/run.json', '{}\n');
    expect(swap.swapped()).toBe(true);
    expect(outside()).toEqual(['r1/']);
    expect(readFileSync(at('runs.moved', 'r1', 'run.json'), 'utf8')).toBe('{}\n');
  });

  it('createFile and makeFolderExclusive create inside the folder checked', async () => {
    mkdirSync(at('datasets', 'tmp-a'));
    const swap = swapAt('open', (p) => p.endsWith('shard-0.bin'), 'datasets');
    const fh = await createFile(ws, 'datasets/tmp-a/shard-0.bin');
    await fh.close();
    expect(swap.swapped()).toBe(true);
    mkdirSync(path.join(out.dir, 'tmp-a'));
    expect(outside()).toEqual(['tmp-a/']);
    expect(existsSync(at('datasets.moved', 'tmp-a', 'shard-0.bin'))).toBe(true);

    vi.restoreAllMocks();
    const claim = swapAt('mkdir', (p) => p.endsWith('.claim-0001'), 'reports');
    await makeFolderExclusive(ws, 'reports/.claim-0001');
    expect(claim.swapped()).toBe(true);
    expect(outside()).toEqual(['tmp-a/']);
    expect(lstatSync(at('reports.moved', '.claim-0001')).isDirectory()).toBe(true);
  });

  it('without /proc/self/fd (macOS, Windows) the swap is seen before the rename and the write refused, naming the link', async () => {
    heldFolderTesting.withoutProcFd = true;
    await makeFolder(ws, 'models');
    swapAt('open', isTemp, 'models');
    await expect(writeFileConfined(ws, 'models/mine.json', '{}')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/^models .*link in the workspace/) });
    expect(outside()).toEqual([]);
  });

  it('a folder that is a link when checked is refused with the existing codes', async () => {
    mkdirSync(at('reports', 'real'));
    symlinkSync(at('reports', 'real'), at('reports', 'alias'));
    await expect(writeFileConfined(ws, 'reports/alias/r.md', 'x')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/^reports\/alias is a link in the workspace/) });
    await expect(makeFolder(ws, 'reports/alias/deeper')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/link in the workspace/) });
    expect(readdirSync(at('reports', 'real'))).toEqual([]);
  });
});

describe.runIf(process.platform === 'linux')('racing a thread that swaps models/ for a link and back', () => {
  it('never lands a file outside; each write lands inside or is refused naming the folder', async () => {
    await makeFolder(ws, 'models');
    // [0]: stop when 1; [1]: swaps made.
    const shared = new Int32Array(new SharedArrayBuffer(8));
    const swapper = new Worker(
      `const { workerData: { root, out, shared } } = require('node:worker_threads');
       const fs = require('node:fs'); const path = require('node:path');
       const m = path.join(root, 'models'), moved = path.join(root, 'models.moved');
       while (Atomics.load(shared, 0) === 0) {
         try { fs.renameSync(m, moved); fs.symlinkSync(out, m); fs.unlinkSync(m); fs.renameSync(moved, m); Atomics.add(shared, 1, 1); } catch {}
         Atomics.wait(shared, 0, 0, 0.2); // a moment as a real folder, so that writes land too
       }`,
      { eval: true, workerData: { root: t.dir, out: out.dir, shared } },
    );
    while (Atomics.load(shared, 1) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused: string[] = [];
    let landed = 0;
    try {
      for (let i = 0; i < 300; i++) {
        try {
          await writeFileConfined(ws, `models/m${i}.json`, '{}\n');
          landed++;
        } catch (err) {
          refused.push((err as Error).message);
        }
        expect(outside()).toEqual([]);
      }
    } finally {
      Atomics.store(shared, 0, 1);
      await new Promise((resolve) => swapper.once('exit', resolve));
    }
    expect(outside()).toEqual([]);
    // Refused by the check of the name (resolve), or by holding the folder.
    for (const message of refused) expect(message).toMatch(/^(models (is a link in the workspace|does not exist|changed while)|path "models" leads outside the workspace through a link)/);
    expect(landed + refused.length).toBe(300);
    expect(Atomics.load(shared, 1)).toBeGreaterThan(10);
  });
});
