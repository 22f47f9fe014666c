// Serve mode's downloads over real sockets, in-process with small limits: a browser that stops
// reading a zip is dropped after the stall time with a log line (no file handle or buffer kept),
// and more zips at once than allowed are answered 503; the server goes on serving.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServices, type Services } from '../../src-main/core/services';
import { startServer, type RunningServer } from '../../src-main/server/serve';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const workspace = tempDir();
const renderer = tempDir();
let services: Services;
let server: RunningServer;
const logs: string[] = [];
const RUN = '20261127-151515-5ea1ed';

beforeAll(async () => {
  requireBuilt();
  // Random bytes do not compress: 48 MB of zip, more than the loopback socket buffers hold.
  mkdirSync(path.join(workspace.dir, 'runs', RUN), { recursive: true });
  writeFileSync(path.join(workspace.dir, 'runs', RUN, 'run.json'), '{}');
  writeFileSync(path.join(workspace.dir, 'runs', RUN, 'checkpoint.bin'), randomBytes(48 * 1024 * 1024));
  services = await createServices({ workspaceDir: workspace.dir, engine: { entry: HOST_ENTRY }, downloads: { offered: true } });
  server = await startServer({ services, rendererDir: renderer.dir, port: 0, token: 't'.repeat(32), log: (l) => logs.push(l), downloadStallMs: 500 });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await services?.dispose();
  workspace.cleanup();
  renderer.cleanup();
});

/** Starts a download on a raw socket and never reads it. */
function stalledDownload(): net.Socket {
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(`GET /download/run/${RUN} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nX-Trainbench-Token: ${server.token}\r\n\r\n`);
  socket.pause();
  return socket;
}

function fullDownload(): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: server.port, path: `/download/run/${RUN}`, headers: { 'x-trainbench-token': server.token } }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      })
      .on('error', reject);
  });
}

describe('serve mode download limits', () => {
  it('drops a reader that stops reading, and answers a full download afterwards', async () => {
    const socket = stalledDownload();
    await expect.poll(() => logs.join('\n'), { timeout: 15_000 }).toMatch(new RegExp(`download run-${RUN}.zip stopped: the reader took nothing for 0.5 s`));
    socket.destroy();
    const full = await fullDownload();
    expect(full.status).toBe(200);
    expect(full.bytes).toBeGreaterThan(48 * 1024 * 1024);
  }, 30_000);

  it('answers 503 past the zips it streams at once', async () => {
    const stalled = [stalledDownload(), stalledDownload(), stalledDownload(), stalledDownload()];
    // Each has started streaming when its first bytes arrive.
    await Promise.all(stalled.map((s) => new Promise((resolve) => s.once('readable', resolve))));
    const refused = await new Promise<{ status: number; body: string }>((resolve) => {
      http.get({ host: '127.0.0.1', port: server.port, path: `/download/run/${RUN}`, headers: { 'x-trainbench-token': server.token } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatch(/4 downloads are being sent already/);
    // A ticket refused for being one too many stays good: the person presses the link again.
    const { url } = await services.downloads.prepare('run', RUN);
    const byTicket = () =>
      new Promise<number>((resolve) => {
        http.get({ host: '127.0.0.1', port: server.port, path: url }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
      });
    expect(await byTicket()).toBe(503);
    for (const s of stalled) s.destroy();
    // Their slots come back once the server sees them gone.
    await expect.poll(async () => (await fullDownload()).status, { timeout: 15_000 }).toBe(200);
    expect(await byTicket()).toBe(200);
  }, 30_000);

  it('drops a reader that takes a little now and then, slower than a download must, so it holds no slot (re-attack 14)', async () => {
    const lines: string[] = [];
    const slowServer = await startServer({ services, rendererDir: renderer.dir, port: 0, token: 't'.repeat(32), log: (l) => lines.push(l), downloadMinRate: { bytes: 4 * 1024 * 1024, windowMs: 1000 } });
    const socket = net.connect(slowServer.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.pause();
    socket.write(`GET /download/run/${RUN} HTTP/1.1\r\nHost: 127.0.0.1:${slowServer.port}\r\nX-Trainbench-Token: ${slowServer.token}\r\n\r\n`);
    // 64 KiB every 100 ms: never still long enough for the stall timer, far under 4 MiB a second.
    const sip = setInterval(() => socket.read(64 * 1024), 100);
    try {
      await expect.poll(() => lines.join('\n'), { timeout: 15_000 }).toMatch(new RegExp(`download run-${RUN}\\.zip stopped: the connection accepted \\d+ bytes in 1 s, less than the 4194304 a download must to keep its slot`));
    } finally {
      clearInterval(sip);
      socket.destroy();
      await slowServer.close();
    }
  }, 30_000);
});

describe('downloads that keep over the floor (re-attack 16)', () => {
  it('give their slot to a window of ours when all are taken, the slowest first; a request without the token takes none', async () => {
    const lines: string[] = [];
    // A fair rate far over what a reader of 160 KiB/s keeps, so the four below are all under it.
    const fairServer = await startServer({ services, rendererDir: renderer.dir, port: 0, token: 'f'.repeat(32), log: (l) => lines.push(l), downloadFairBytesPerSecond: 32 * 1024 * 1024 });
    const get = (headers: Record<string, string>, target = `/download/run/${RUN}`) =>
      new Promise<{ status: number; bytes: number }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: fairServer.port, path: target, headers }, (res) => {
            let bytes = 0;
            res.on('data', (c: Buffer) => (bytes += c.length));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
          })
          .on('error', reject);
      });
    // Four readers that each take 16 KiB every 100 ms: never still, well over the floor of 64 KiB in 30 s.
    const sippers = Array.from({ length: 4 }, () => {
      const socket = net.connect(fairServer.port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.pause();
      socket.write(`GET /download/run/${RUN} HTTP/1.1\r\nHost: 127.0.0.1:${fairServer.port}\r\nX-Trainbench-Token: ${fairServer.token}\r\n\r\n`);
      const timer = setInterval(() => socket.read(16 * 1024), 100);
      return { socket, timer };
    });
    const gave = () => lines.filter((l) => /download run-\S+\.zip stopped: it gave its slot to another download: \d+ bytes a second, under the 33554432/.test(l));
    try {
      await Promise.all(sippers.map((s) => new Promise((resolve) => s.socket.once('readable', resolve))));
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      // Without the token: refused as before, and nobody's slot is taken for it.
      expect((await get({})).status).toBe(401);
      // Nor for a run that is not there (re-attack 17): a download is planned before it claims a slot.
      const missing = await new Promise<number>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: fairServer.port, path: '/download/run/20990101-000000-absent', headers: { 'x-trainbench-token': fairServer.token } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', reject);
      });
      expect(missing).toBeGreaterThanOrEqual(400);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(gave()).toEqual([]);
      // One ticket in two requests at once (re-attack 18): it is spent before a slot is claimed, so the request that
      // finds it spent takes no one's slot; only the download that is sent does.
      const { url } = await services.downloads.prepare('run', RUN);
      const [first, second] = await Promise.all([get({}, url), get({}, url)]);
      expect([first.status, second.status].sort()).toEqual([200, 403]);
      expect(Math.max(first.bytes, second.bytes)).toBeGreaterThan(48 * 1024 * 1024);
      expect(gave()).toHaveLength(1);
    } finally {
      for (const s of sippers) {
        clearInterval(s.timer);
        s.socket.destroy();
      }
      await fairServer.close();
    }
  }, 30_000);
});
