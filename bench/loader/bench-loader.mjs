#!/usr/bin/env node
// Loader benchmark: the cached loader on the board dataset (batch 750, 1 and 2
// workers) against the raw sequential read bandwidth of the same shard files,
// and against reading the source dumps in place (uncached).
//   npm run bench:loader [-- --records N] [-- --seconds S] [-- --workspace DIR] [-- --out FILE | --save]
// The dataset is built in a temporary workspace removed at exit (also on
// Ctrl-C) unless --workspace names one to keep; JSON only with --out or --save.
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { argValue, benchOutput, numberArg, REPO_ROOT as root, tempFolder } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const addon = require(path.join(root, 'build', 'Release', 'trainbench_native.node'));
const dist = (p) => require(path.join(root, 'dist', 'src-main', p));
const { openWorkspace } = dist('core/workspace/workspace.js');
const { writeBoardDumps } = dist('core/datasets/example-board.js');
const { buildCache } = dist('core/datasets/cache-builder.js');
const { openSource } = dist('core/datasets/importers/open-source.js');

const args = process.argv.slice(2);
const output = benchOutput(args);
const records = Math.round(numberArg(args, '--records', 20000));
const seconds = numberArg(args, '--seconds', 3);
const wsDir = argValue(args, '--workspace', undefined) ?? tempFolder('trainbench-bench-loader-');
const BATCH = 750;

const ws = await openWorkspace(wsDir);
const spec = await writeBoardDumps(ws, records, 0);
const built = await buildCache(ws, await openSource(spec), { name: 'bench-board', shardBytes: 64 << 20, fieldMap: [] }, { jobId: 'bench', spec });
const dir = path.join(ws.root, 'datasets', built.dataset.id);
const shards = readdirSync(dir).filter((f) => f.endsWith('.bin')).map((f) => path.join(dir, f));
const recordBytes = built.dataset.fields.reduce((a, f) => a + f.recordBytes, 0);

// The page cache is warm for both (the files were just written and read): this
// compares the loader with memory-speed sequential reads of the same bytes.
const reads = [];
for (let i = 0; i < 3; i++) reads.push(await addon.sequentialRead(shards));
const raw = reads.reduce((a, b) => (b.mbPerSec > a.mbPerSec ? b : a));

const cacheSource = JSON.stringify({ kind: 'cache', dir });
const layout = (await openSource(spec)).rawLayout();
const rawSource = JSON.stringify({ kind: 'raw', layout: { records, fields: layout } });
const rows = [];
for (const [kind, source] of [['cached', cacheSource], ['uncached', rawSource]]) {
  for (const workers of [1, 2]) {
    const r = await addon.benchLoader(source, JSON.stringify({ batchSize: BATCH, workers, prefetch: 2, seed: 1 }), 1e9, seconds);
    rows.push({ kind, workers, batch: BATCH, ...r, ofRawRead: r.mbPerSec / raw.mbPerSec });
  }
}

const result = {
  benchmark: 'loader',
  date: new Date().toISOString(),
  host: { hostname: os.hostname(), cpuModel: os.cpus()[0]?.model, cores: os.cpus().length },
  dataset: { id: built.dataset.id, records, recordBytes, bytes: built.dataset.bytes, shards: shards.length },
  rawSequentialRead: raw,
  loader: rows,
  notes: [
    'Page cache warm for every measurement (no root-free way to drop it here); the raw read is the same shard files front to back in 8 MiB reads.',
    'The consumer touches one byte per 64 of every batch and does no compute, so these are upper bounds.',
    'uncached reads each record from the source dumps (features.npy, policy.npy, value.npy) with one positioned read per field.',
  ],
};

const n = (x) => Math.round(x).toLocaleString('en-US');
console.log(`board dataset: ${records} records of ${recordBytes} bytes, ${shards.length} shards, ${(built.dataset.bytes / 1e6).toFixed(0)} MB`);
console.log(`raw sequential read of the shards: ${raw.mbPerSec.toFixed(0)} MB/s\n`);
console.log('path      workers   samples/s      MB/s   of raw read   p50 ms   p95 ms  blocked');
for (const r of rows) {
  console.log(`${r.kind.padEnd(9)} ${String(r.workers).padStart(7)} ${n(r.samplesPerSec).padStart(11)} ${r.mbPerSec.toFixed(0).padStart(9)} ${(100 * r.ofRawRead).toFixed(0).padStart(12)}% ${r.latencyP50Ms.toFixed(2).padStart(8)} ${r.latencyP95Ms.toFixed(2).padStart(8)} ${(100 * r.waitedFraction).toFixed(0).padStart(7)}%`);
}
const best = (k) => Math.max(...rows.filter((r) => r.kind === k).map((r) => r.samplesPerSec));
console.log(`\ncached / uncached (best of each): ${(best('cached') / best('uncached')).toFixed(2)}x`);
output.write(`loader-${os.hostname()}`, result);
