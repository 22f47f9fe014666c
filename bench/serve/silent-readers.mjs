#!/usr/bin/env node
// Serve mode's memory under clients that never read, sent many small events (a run's output, line by line): N
// clients connect with the token and stop reading; the server's event hub emits E events of ~142 bytes, 500 at a
// time. Per accounting, in a fresh process each: when each client was dropped, with how many messages waiting, and
// the server's resident memory after a full GC at its highest. Two rows side by side: the drop limit counting each
// queued message's cost beside its bytes (as shipped), and counting bytes alone (the accounting before: the
// per-message cost set to 0 in that child only).
//   npm run build:ts && node bench/serve/silent-readers.mjs [--clients 8] [--events 300000] [--out FILE | --save]
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { benchOutput, numberArg, REPO_ROOT } from '../../scripts/bench-output.mjs';

const args = process.argv.slice(2);
const clients = Math.round(numberArg(args, '--clients', 8));
const events = Math.round(numberArg(args, '--events', 300_000));
const LIMIT_BYTES = 32 * 1024 * 1024;

if (args.includes('--child')) {
  process.stdout.write(JSON.stringify(await measure(Number(args[args.indexOf('--child') + 1]))) + '\n');
  process.exit(0);
}

/** One accounting in this process: `overhead` bytes counted per queued message. */
async function measure(overhead) {
  const require = createRequire(import.meta.url);
  const WebSocket = require('ws');
  const outbox = require(path.join(REPO_ROOT, 'dist/src-main/server/ws-outbox.js'));
  // The compiled module reads its own export, so this child counts `overhead` per message.
  outbox.MESSAGE_OVERHEAD_BYTES = overhead;
  const { createServices } = require(path.join(REPO_ROOT, 'dist/src-main/core/services.js'));
  const { startServer } = require(path.join(REPO_ROOT, 'dist/src-main/server/serve.js'));
  const services = await createServices({ workspaceDir: mkdtempSync(path.join(os.tmpdir(), 'trainbench-bench-silent-')) });
  const drops = [];
  const log = (line) => {
    const m = /dropped client \S+ ([\d.]+) MiB unsent(?: in ([\d,]+) messages)?/.exec(line);
    if (m) drops.push({ mib: Number(m[1]), messages: m[2] ? Number(m[2].replace(/,/g, '')) : null, reason: line.includes('for 30 s') ? 'stalled 30 s' : 'limit' });
  };
  const server = await startServer({ services, rendererDir: path.join(REPO_ROOT, 'dist/renderer'), port: 0, maxBufferedBytes: LIMIT_BYTES, log });
  for (let i = 0; i < clients; i++) {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws._socket.pause(); // never reads again
  }
  global.gc();
  const rss = () => process.memoryUsage().rss / 2 ** 20;
  const before = rss();
  let peak = before;
  const event = { state: 'ready', pid: 1, restarts: 0, lastFailure: 'x'.repeat(60) };
  const started = performance.now();
  for (let i = 0; i < events / 500; i++) {
    for (let k = 0; k < 500; k++) services.events.emit('engine.status', event);
    await new Promise((resolve) => setImmediate(resolve));
    if (i % 10 === 0) {
      global.gc();
      peak = Math.max(peak, rss());
    }
  }
  global.gc();
  peak = Math.max(peak, rss());
  return { overheadBytes: overhead, rssBeforeMiB: before, rssPeakMiB: peak, perClientMiB: (peak - before) / clients, drops, seconds: (performance.now() - started) / 1000 };
}

const rows = [];
for (const overhead of [outboxOverhead(), 0]) {
  const child = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...args, '--child', String(overhead)], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (child.status !== 0) throw new Error(`the child for ${overhead} bytes a message failed: ${child.stderr}`);
  rows.push(JSON.parse(child.stdout.trim().split('\n').at(-1)));
}

function outboxOverhead() {
  return createRequire(import.meta.url)(path.join(REPO_ROOT, 'dist/src-main/server/ws-outbox.js')).MESSAGE_OVERHEAD_BYTES;
}

console.log(`${clients} clients that never read, ${events.toLocaleString('en-US')} events of ~142 bytes, a ${LIMIT_BYTES / 2 ** 20} MiB limit each`);
console.log('counted per message  dropped (of clients)  messages waiting at drop  RSS growth, all clients  per client (MiB)');
for (const r of rows) {
  const waiting = r.drops.map((d) => d.messages).filter((n) => n !== null);
  console.log(
    `${`${r.overheadBytes} B + its bytes`.padEnd(19)}  ${`${r.drops.length} (${[...new Set(r.drops.map((d) => d.reason))].join(', ') || '-'})`.padEnd(20)}` +
      `  ${(waiting.length ? Math.max(...waiting).toLocaleString('en-US') : '-').padStart(24)}  ${(r.rssPeakMiB - r.rssBeforeMiB).toFixed(0).padStart(23)}  ${r.perClientMiB.toFixed(0).padStart(16)}`,
  );
}
benchOutput(args).write('serve-silent-readers', { bench: 'serve-silent-readers', date: new Date().toISOString(), clients, events, limitBytes: LIMIT_BYTES, rows });
