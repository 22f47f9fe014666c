// What the serve-mode benches share: `trainbench serve` on a fresh workspace in its own process, its CPU and memory
// read from /proc (Linux), and a window that asks runs.list every 200 ms and times the answers.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import WebSocket from 'ws';

import { REPO_ROOT as root, tempFolder } from '../../scripts/bench-output.mjs';

/** Starts the server; resolves once it prints its address. Killed when this process exits. */
export async function startServe(prefix) {
  const workspace = tempFolder(prefix);
  const server = spawn(process.execPath, [path.join(root, 'bin', 'trainbench.js'), 'serve', '--port', '0', '--workspace', workspace], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.once('exit', () => server.kill('SIGTERM'));
  const { port, token } = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\/\?token=([A-Za-z0-9_-]+)/.exec(out);
      if (m) resolve({ port: Number(m[1]), token: m[2] });
    });
    server.once('exit', (code) => reject(new Error(`trainbench serve ended (${code}) before it served: ${out}`)));
  });
  return {
    server,
    port,
    token,
    origin: `http://127.0.0.1:${port}`,
    /** The server's CPU seconds so far (user + system). */
    cpuSeconds() {
      const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    },
    /** The server's resident memory now, MiB. */
    rssMiB() {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]) / 1024;
    },
  };
}

/** A window asking runs.list every 200 ms; `stop()` gives its answer times (ms). */
export async function listWindow({ port, token, origin }) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api?token=${token}`, { headers: { origin } });
  const asked = new Map();
  const times = [];
  let id = 0;
  ws.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.type === 'response' && asked.has(m.id)) {
      times.push(performance.now() - asked.get(m.id));
      asked.delete(m.id);
    }
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const timer = setInterval(() => {
    asked.set(++id, performance.now());
    ws.send(JSON.stringify({ id, method: 'runs.list', params: {} }));
  }, 200);
  return () => {
    clearInterval(timer);
    ws.close();
    return times;
  };
}

/** The nearest-rank quantile (null for no values). */
export const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : null;
};
