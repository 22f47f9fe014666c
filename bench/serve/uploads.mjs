#!/usr/bin/env node
// Serve mode under uploads (re-attack 27, U1): `trainbench serve` on a fresh workspace, N uploads of S MiB at once
// from a sender in its own process, while a window asks runs.list every 200 ms. Prints the uploads' rate, the
// server's CPU (from /proc, Linux) and the window's answer times, idle and during the uploads.
//   npm run build:ts && node bench/serve/uploads.mjs [--uploads 4] [--mib 1024] [--out FILE | --save]
import { spawn } from 'node:child_process';

import { benchOutput, numberArg } from '../../scripts/bench-output.mjs';
import { listWindow, quantile, startServe } from './serve-process.mjs';

const args = process.argv.slice(2);
const output = benchOutput(args);
const uploads = Math.round(numberArg(args, '--uploads', 4));
const mib = Math.round(numberArg(args, '--mib', 1024));

// The sender writes one reused 1 MiB chunk as fast as the server reads it: its own process, its own core time.
const SENDER = `
const http = require('http');
const [port, token, name, bytes] = process.argv.slice(1);
const chunk = Buffer.alloc(1 << 20, 97);
const t0 = performance.now();
const req = http.request({ host: '127.0.0.1', port: Number(port), method: 'PUT', path: '/upload/sources/' + name,
  headers: { 'content-length': bytes, 'x-trainbench-token': token, origin: 'http://127.0.0.1:' + port } });
req.on('response', (res) => { res.resume(); res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, seconds: (performance.now() - t0) / 1000 }))); });
req.on('error', (e) => console.log(JSON.stringify({ error: e.message })));
let sent = 0;
(function pump() { while (sent < Number(bytes)) { sent += chunk.length; if (!req.write(chunk)) return void req.once('drain', pump); } req.end(); })();
`;

const serve = await startServe('trainbench-bench-uploads-');
const { port, token } = serve;

function send(i) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', SENDER, String(port), token, `upload-${i}.bin`, String(mib * 1024 * 1024)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', () => resolve(JSON.parse(out.trim() || '{"error":"no answer"}')));
  });
}

const idle = await listWindow(serve);
await new Promise((resolve) => setTimeout(resolve, 3000));
const idleTimes = idle();
const busy = await listWindow(serve);
const cpu0 = serve.cpuSeconds();
const t0 = performance.now();
const answers = await Promise.all(Array.from({ length: uploads }, (_, i) => send(i)));
const wall = (performance.now() - t0) / 1000;
const cpu = (serve.cpuSeconds() - cpu0) / wall;
const busyTimes = busy();

const result = {
  bench: 'serve-uploads',
  date: new Date().toISOString(),
  uploads,
  mibEach: mib,
  seconds: wall,
  mibPerSecond: (uploads * mib) / wall,
  serverCores: cpu,
  answers,
  runsListMs: {
    idle: { median: quantile(idleTimes, 0.5), p90: quantile(idleTimes, 0.9), n: idleTimes.length },
    duringUploads: { median: quantile(busyTimes, 0.5), p90: quantile(busyTimes, 0.9), max: quantile(busyTimes, 1), n: busyTimes.length },
  },
};
console.log(`${uploads} uploads of ${mib} MiB at once: ${wall.toFixed(1)} s, ${result.mibPerSecond.toFixed(0)} MiB/s over all, server ${cpu.toFixed(2)} cores`);
console.log('upload  status  seconds');
answers.forEach((a, i) => console.log(`${String(i).padStart(6)}  ${String(a.status ?? a.error).padStart(6)}  ${a.seconds?.toFixed(1) ?? '-'}`));
console.log(`runs.list answered in: idle median ${result.runsListMs.idle.median?.toFixed(0)} ms; during the uploads median ${result.runsListMs.duringUploads.median?.toFixed(0)}, p90 ${result.runsListMs.duringUploads.p90?.toFixed(0)}, max ${result.runsListMs.duringUploads.max?.toFixed(0)} ms`);
output.write('serve-uploads', result);
process.exit(0);
