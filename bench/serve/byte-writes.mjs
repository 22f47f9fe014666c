#!/usr/bin/env node
// Serve mode under a message written a byte at a time (re-attack 27, F1): `trainbench serve` on a fresh workspace;
// N connections that hold the token each start a 16 MiB message and write it one byte per TCP segment; a connection
// the server closes opens again at once and starts over. Rounds of S seconds with a pause between them. Per round:
// the server's resident memory before, at its peak and after the pause, its CPU, the connections it closed, and a
// window's runs.list answer times. Memory bounded and the same after every round means what the server keeps after
// the first is the allocator's free memory, used again, not held messages.
//   npm run build:ts && node bench/serve/byte-writes.mjs [--connections 30] [--seconds 40] [--rounds 3]
//     [--pause 15] [--out FILE | --save]
import { randomBytes } from 'node:crypto';
import net from 'node:net';

import { benchOutput, numberArg } from '../../scripts/bench-output.mjs';
import { listWindow, quantile, startServe } from './serve-process.mjs';

const args = process.argv.slice(2);
const output = benchOutput(args);
const connections = Math.round(numberArg(args, '--connections', 30));
const seconds = numberArg(args, '--seconds', 40);
const rounds = Math.round(numberArg(args, '--rounds', 3));
const pause = numberArg(args, '--pause', 15);
const MESSAGE_BYTES = 16 * 1024 * 1024;

const serve = await startServe('trainbench-bench-byte-writes-');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A masked text frame's header announcing `bytes` of payload (the bytes themselves follow one at a time). */
function frameHeader(bytes) {
  const header = Buffer.alloc(14);
  header[0] = 0x81;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(bytes), 2);
  header.writeUInt32BE(0x01020304, 10);
  return header;
}

/** One connection that upgrades, then writes its message a byte at a time until stopped; reopens when closed. */
function writer(tally) {
  let socket = null;
  let timer = null;
  let stopped = false;
  const open = () => {
    if (stopped) return;
    socket = net.connect(serve.port, '127.0.0.1');
    socket.setNoDelay(true);
    let head = '';
    let upgraded = false;
    socket.write(
      `GET /api?token=${serve.token} HTTP/1.1\r\nHost: 127.0.0.1:${serve.port}\r\nOrigin: ${serve.origin}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    socket.on('data', (d) => {
      if (upgraded) return;
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      upgraded = head.startsWith('HTTP/1.1 101');
      if (!upgraded) return void tally.refused++;
      tally.upgraded++;
      socket.write(frameHeader(MESSAGE_BYTES));
      const one = Buffer.from([0x61 ^ 0x01]);
      timer = setInterval(() => {
        if (socket.writableLength < 1024) {
          socket.write(one);
          tally.bytes++;
        }
      }, 1);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      if (stopped) return;
      if (upgraded) tally.closedByServer++;
      setImmediate(open);
    });
  };
  open();
  return () => {
    stopped = true;
    clearInterval(timer);
    socket?.destroy();
  };
}

const rows = [];
for (let r = 1; r <= rounds; r++) {
  const before = serve.rssMiB();
  const tally = { upgraded: 0, refused: 0, closedByServer: 0, bytes: 0 };
  const window = await listWindow(serve);
  const cpu0 = serve.cpuSeconds();
  const stops = Array.from({ length: connections }, () => writer(tally));
  let peak = before;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    await sleep(500);
    peak = Math.max(peak, serve.rssMiB());
  }
  const cores = (serve.cpuSeconds() - cpu0) / seconds;
  stops.forEach((stop) => stop());
  const times = window();
  await sleep(pause * 1000);
  rows.push({
    round: r,
    ...tally,
    rssMiB: { before, peak, after: serve.rssMiB() },
    serverCores: cores,
    runsListMs: { median: quantile(times, 0.5), p90: quantile(times, 0.9), max: quantile(times, 1), n: times.length },
  });
}

const result = { bench: 'serve-byte-writes', date: new Date().toISOString(), connections, seconds, rounds, pauseSeconds: pause, messageBytes: MESSAGE_BYTES, perRound: rows };
console.log(`${connections} connections writing a ${MESSAGE_BYTES / 2 ** 20} MiB message a byte at a time, ${seconds} s a round, ${pause} s between`);
console.log('round  upgraded  closed by server  bytes written  RSS before  peak  after (MiB)  server cores  runs.list median/p90/max (ms)');
for (const row of rows) {
  const m = row.runsListMs;
  console.log(
    `${String(row.round).padStart(5)}  ${String(row.upgraded).padStart(8)}  ${String(row.closedByServer).padStart(16)}  ${String(row.bytes).padStart(13)}` +
      `  ${row.rssMiB.before.toFixed(0).padStart(10)}  ${row.rssMiB.peak.toFixed(0).padStart(4)}  ${row.rssMiB.after.toFixed(0).padStart(11)}` +
      `  ${row.serverCores.toFixed(2).padStart(12)}  ${[m.median, m.p90, m.max].map((v) => v?.toFixed(0) ?? '-').join('/')}`,
  );
}
output.write('serve-byte-writes', result);
process.exit(0);
