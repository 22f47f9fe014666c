// Issue 41, F5: a JSONL file larger than the read budget is read in windows spread over it: only whole lines, in
// order, none twice, the first and the last among them, and the answer says how much was read.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { jsonlLinesBounded } from '../../src-main/core/workspace/jsonl-lines';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const t = tempDir('jsonl-bounded-');
let ws: Workspace;
beforeAll(async () => {
  ws = await openWorkspace(t.dir);
});
afterAll(() => t.cleanup());

async function read(file: string, maxBytes: number) {
  const { batches, cut } = await jsonlLinesBounded(ws, file, 4096, maxBytes);
  const got: string[] = [];
  for await (const batch of batches) got.push(...batch);
  return { got, cut };
}

describe('jsonlLinesBounded', () => {
  it('reads a file within the budget whole, with no cut', async () => {
    writeFileSync(path.join(t.dir, 'small.jsonl'), '{"i":1}\n{"i":2}\n{"i":3}');
    expect(await read('small.jsonl', 1024 * 1024)).toEqual({ got: ['{"i":1}', '{"i":2}', '{"i":3}'], cut: null });
  });

  it('reads a larger one in windows: whole lines only, in order, once each, first and last kept, the bytes read bounded', async () => {
    // Lines of varied length, so windows start and end anywhere in a line, on its first byte too.
    const n = 200_000;
    const text = Array.from({ length: n }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(i % 37) })).join('\n') + '\n';
    writeFileSync(path.join(t.dir, 'big.jsonl'), text);
    const budget = 2 * 1024 * 1024;
    const { got, cut } = await read('big.jsonl', budget);
    const seen = got.map((line) => (JSON.parse(line) as { i: number }).i);
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(n - 1);
    for (let k = 1; k < seen.length; k++) expect(seen[k]).toBeGreaterThan(seen[k - 1]!);
    expect(seen.length).toBeLessThan(n / 2);
    expect(cut).toMatchObject({ file: 'big.jsonl', sizeBytes: Buffer.byteLength(text) });
    expect(cut!.readBytes).toBeLessThanOrEqual(budget);
    expect(cut!.note).toMatch(/^big\.jsonl is \d+\.\d MiB, more than the 2\.0 MiB read for an answer: 8 pieces of it were read/);
  });

  it('has no lines and no cut for a missing file', async () => {
    expect(await read('missing.jsonl', 1024)).toEqual({ got: [], cut: null });
  });
});
