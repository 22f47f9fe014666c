// Kill `trainbench cache build` at random points: no directory that opens as a
// valid cache is ever left half-written.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { datasetsRoot, listDatasets, verifyDataset } from '../../src-main/core/datasets/cache-store';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { testWorkspace } from '../helpers/datasets';
import { loadAddon } from '../helpers/native';
import { CLI, requireBuilt } from '../helpers/repo';

const addon = loadAddon();
const KILLS = 24;
let ws: Workspace;
let wsDir: string;
let cleanup: () => void;
let src: string;

beforeAll(async () => {
  requireBuilt();
  ({ ws, dir: wsDir, cleanup } = await testWorkspace());
  src = path.join(wsDir, 'sources', 'blob.bin');
  writeFileSync(src, randomBytes(24 << 20));
});
afterAll(() => cleanup?.());

function build(): { done: Promise<number | null>; kill(): void } {
  const child = spawn(process.execPath, [CLI, 'cache', 'build', `${src}:x:uint8:1024`, '--name', 'killme', '--shard-size', '1MiB', '--workspace', wsDir], {
    stdio: 'ignore',
  });
  return { done: new Promise((resolve) => child.once('exit', (code) => resolve(code))), kill: () => child.kill('SIGKILL') };
}

const published = () => readdirSync(datasetsRoot(ws)).filter((n) => !n.startsWith('.'));

describe('killing a cache build', () => {
  it(`${KILLS} random kills never leave a cache that opens as valid but is not`, async () => {
    const t0 = Date.now();
    expect(await build().done).toBe(0);
    const full = Date.now() - t0;
    console.log(`full build: ${full} ms`);
    let interrupted = 0;
    for (let i = 0; i < KILLS; i++) {
      for (const id of published()) rmSync(path.join(datasetsRoot(ws), id), { recursive: true });
      const b = build();
      const delay = Math.random() * full * 1.1;
      await new Promise((r) => setTimeout(r, delay));
      b.kill();
      const code = await b.done;
      if (code !== 0) interrupted++;
      await listDatasets(ws); // sweeps what dead builds left behind
      expect(readdirSync(datasetsRoot(ws)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
      for (const id of published()) {
        // Whatever is published must be whole: checksums match and the native loader opens it.
        const report = await verifyDataset(ws, id);
        expect(report.problems, `after a kill at ${delay.toFixed(0)} ms`).toEqual([]);
        expect(addon.sourceInfo(JSON.stringify({ kind: 'cache', dir: path.join(datasetsRoot(ws), id) })).records).toBe(24 * 1024);
      }
    }
    console.log(`${interrupted} of ${KILLS} builds were killed before they finished`);
    expect(interrupted).toBeGreaterThanOrEqual(KILLS / 3);
  }, 300_000);
});
