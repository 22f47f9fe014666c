// Serve mode over real sockets: token, Origin, validation, static files.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { DevicesSchema } from '../../src-main/api/devices';
import type { RunningServer } from '../../src-main/server/serve';
import { startServer } from '../../src-main/server/serve';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let server: RunningServer;
let base: string;
let cleanup: () => Promise<void>;
const renderer = tempDir();

beforeAll(async () => {
  mkdirSync(path.join(renderer.dir, 'assets'));
  writeFileSync(path.join(renderer.dir, 'index.html'), '<!doctype html><title>tb</title>');
  writeFileSync(path.join(renderer.dir, 'assets', 'app.js'), 'console.log(1)');
  const t = await testServices();
  cleanup = t.cleanup;
  server = await startServer({ services: t.services, rendererDir: renderer.dir, port: 0 });
  base = `127.0.0.1:${server.port}`;
});

afterAll(async () => {
  await server?.close();
  await cleanup?.();
  renderer.cleanup();
});

function connect(query: string, origin?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${base}/api${query}`, origin ? { origin } : {});
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** Sends one request and resolves with its response (events are skipped). */
function request(ws: WebSocket, message: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const onMessage = (raw: WebSocket.RawData) => {
      const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (msg.type !== 'response') return;
      ws.off('message', onMessage);
      resolve(msg);
    };
    ws.on('message', onMessage);
    ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  });
}

describe('serve mode', () => {
  it('prints a loopback URL carrying the token', () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=${server.token}`);
  });

  it('answers contract requests with the token and a same-origin page', async () => {
    const ws = await connect(`?token=${server.token}`, `http://${base}`);
    const res = await request(ws, { type: 'request', id: 7, method: 'engine.devices', params: {} });
    expect(res).toMatchObject({ id: 7, ok: true });
    expect(() => DevicesSchema.parse(res.result)).not.toThrow();
    ws.close();
  });

  it('pushes the engine status as soon as a client connects', async () => {
    const ws = new WebSocket(`ws://${base}/api?token=${server.token}`);
    const first = await new Promise<Record<string, unknown>>((resolve) =>
      ws.once('message', (raw) => resolve(JSON.parse(raw.toString()))),
    );
    expect(first).toMatchObject({ type: 'event', event: 'engine.status', data: { state: 'ready' } });
    ws.close();
  });

  it('refuses a connection without the token', async () => {
    await expect(connect('', `http://${base}`)).rejects.toThrow('HTTP 403');
  });

  it('refuses a wrong token', async () => {
    // One character changed (a fixed 'x' in its place was the token itself whenever it already ended in 'x').
    await expect(connect(`?token=${server.token.slice(0, -1)}${server.token.endsWith('x') ? 'y' : 'x'}`, `http://${base}`)).rejects.toThrow('HTTP 403');
  });

  it('answers a tab whether its token is this server\'s, so a stale one is said in words (204, 401; GET only)', async () => {
    const check = (headers: Record<string, string>, method = 'GET') => fetch(`http://${base}/api/token`, { method, headers });
    const ok = await check({ 'x-trainbench-token': server.token });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    const wrong = `${server.token.slice(0, -1)}${server.token.endsWith('x') ? 'y' : 'x'}`;
    const refused = await check({ 'x-trainbench-token': wrong });
    expect(refused.status).toBe(401);
    expect(await refused.text()).not.toContain(server.token);
    expect((await check({})).status).toBe(401);
    expect((await fetch(`http://${base}/api/token?token=${server.token}`)).status).toBe(401); // a header, never the URL
    expect((await check({ 'x-trainbench-token': server.token }, 'DELETE')).status).toBe(405);
  });

  it('refuses a page from another origin even with the token', async () => {
    await expect(connect(`?token=${server.token}`, 'http://evil.example')).rejects.toThrow('HTTP 403');
  });

  it('answers malformed messages with E_BAD_REQUEST instead of dropping the socket', async () => {
    const ws = await connect(`?token=${server.token}`);
    expect(await request(ws, 'not json')).toMatchObject({ ok: false, error: { code: 'E_BAD_REQUEST' } });
    expect(await request(ws, { type: 'request', id: 3 })).toMatchObject({
      id: 3,
      ok: false,
      error: { code: 'E_BAD_REQUEST', message: expect.stringContaining('method') },
    });
    expect(await request(ws, { type: 'request', id: 4, method: 'engine.devices', params: { all: 1 } })).toMatchObject({
      id: 4,
      error: { code: 'E_BAD_REQUEST', message: expect.stringContaining('all') },
    });
    expect(await request(ws, { type: 'request', id: 5, method: 'fs.read', params: {} })).toMatchObject({
      id: 5,
      error: { code: 'E_UNKNOWN_METHOD' },
    });
    const ok = await request(ws, { type: 'request', id: 6, method: 'engine.ping', params: {} });
    expect(ok).toMatchObject({ id: 6, ok: true });
    ws.close();
  });

  it('serves the renderer with a strict CSP and falls back to index.html', async () => {
    const res = await fetch(`http://${base}/assets/app.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('javascript');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const fallback = await fetch(`http://${base}/runs/123`);
    expect(await fallback.text()).toContain('<title>tb</title>');
  });

  it('never serves files outside the renderer folder', async () => {
    for (const p of ['/..%2f..%2f..%2fetc%2fpasswd', '/%2e%2e/%2e%2e/etc/passwd']) {
      const res = await fetch(`http://${base}${p}`);
      const body = await res.text();
      expect(body).not.toContain('root:');
    }
  });

  it('refuses methods other than GET and HEAD', async () => {
    expect((await fetch(`http://${base}/`, { method: 'POST' })).status).toBe(405);
  });
});
