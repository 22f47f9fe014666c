// Serve mode's limits over real sockets: a client that never reads is dropped
// with a log line instead of growing the server's memory, and a server bound to
// every interface on purpose accepts pages opened under the machine's name.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import type { Services } from '../../src-main/core/services';
import { startServer } from '../../src-main/server/serve';
import { MAX_IN_FLIGHT } from '../../src-main/server/ws-limits';
import { MESSAGE_OVERHEAD_BYTES } from '../../src-main/server/ws-outbox';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
const renderer = tempDir();

beforeAll(async () => {
  const t = await testServices();
  services = t.services;
  cleanup = t.cleanup;
});

afterAll(async () => {
  await cleanup?.();
  renderer.cleanup();
});

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Sends app.info on `ws` and resolves with the first response: a window at work, which has sent a whole message. */
async function answersAppInfo(ws: WebSocket) {
  const answer = new Promise<Record<string, unknown>>((resolve) =>
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (msg.type === 'response') resolve(msg);
    }),
  );
  ws.send(JSON.stringify({ type: 'request', id: 1, method: 'app.info', params: {} }));
  return answer;
}

describe('a client that does not read its socket', () => {
  it('is dropped once its unsent bytes pass the limit, and the log says so', async () => {
    const lines: string[] = [];
    const limit = 1 << 20;
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxBufferedBytes: limit, log: (l) => lines.push(l) });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      (ws as unknown as { _socket: net.Socket })._socket.pause(); // never read again
      const failure = 'x'.repeat(256 * 1024);
      // 100 MiB of events: without a limit all of it would wait in the server's memory.
      for (let i = 0; i < 400 && !lines.some((l) => l.includes('dropped')); i++) {
        services.events.emit('engine.status', { state: 'ready', pid: 1, restarts: i, lastFailure: failure });
        await tick();
      }
      const dropped = lines.find((l) => l.startsWith('dropped client'));
      expect(dropped, lines.join('\n')).toMatch(/not reading its socket/);
      const mib = Number(/([\d.]+) MiB unsent/.exec(dropped!)![1]);
      expect(mib * 2 ** 20).toBeLessThan(limit + 2 * failure.length);
      // Other clients are unaffected.
      const other = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      other.close();
    } finally {
      await server.close();
    }
  });
});

describe('small events to a client that does not read (fifth re-attack of issue 41)', () => {
  it('count what each message costs the server beside its bytes: dropped at the limit in memory, not at 4x it', async () => {
    // Eight such clients, sent a run's output line by line, held about 140 MB each under a 32 MiB limit: a queued
    // message costs the server ~340 bytes beyond its text (MESSAGE_OVERHEAD_BYTES), which the socket's count leaves out.
    const lines: string[] = [];
    const limit = 4 << 20;
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxBufferedBytes: limit, log: (l) => lines.push(l) });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      (ws as unknown as { _socket: net.Socket })._socket.pause();
      const event = { state: 'ready', pid: 1, restarts: 0, lastFailure: 'x'.repeat(40) } as const;
      const eventBytes = JSON.stringify({ type: 'event', name: 'engine.status', data: event }).length;
      let emitted = 0;
      while (emitted < 200_000 && !lines.some((l) => l.startsWith('dropped client'))) {
        for (let k = 0; k < 500; k++, emitted++) services.events.emit('engine.status', event);
        await tick();
      }
      const dropped = lines.find((l) => l.startsWith('dropped client'));
      const [, mib, count] = /([\d.]+) MiB unsent in ([\d,]+) messages, it is not reading its socket/.exec(dropped ?? '') ?? [];
      expect(count, lines.join('\n')).toBeDefined();
      // What waited when it was dropped: the limit with each message's cost, not the limit in bytes alone (~4x as many).
      const held = Number(count.replace(/,/g, ''));
      expect(held * (eventBytes + MESSAGE_OVERHEAD_BYTES)).toBeLessThanOrEqual(limit);
      expect(held * (eventBytes + MESSAGE_OVERHEAD_BYTES)).toBeGreaterThan(0.95 * limit);
      expect(Number(mib) * 2 ** 20).toBeGreaterThan(0.9 * limit);
      console.log(`${emitted.toLocaleString('en-US')} events of ${eventBytes} bytes emitted; dropped with ${held.toLocaleString('en-US')} waiting (${mib} MiB with their cost)`);
    } finally {
      await server.close();
    }
  });
});

describe('events to many windows (re-attack 15)', () => {
  it('are made JSON once for every connection, and each connection gets them', async () => {
    // 30 clients that never read each held their own copies of a training run's events: 1.4 GiB.
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      const clients = await Promise.all(Array.from({ length: 5 }, () => open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`)));
      const got = clients.map(
        (ws) =>
          new Promise<unknown>((resolve) =>
            ws.on('message', (raw) => {
              const msg = JSON.parse(raw.toString()) as { type: string; data?: { restarts?: number } };
              if (msg.type === 'event' && msg.data?.restarts === 4242) resolve(msg.data);
            }),
          ),
      );
      let made = 0;
      const data = { state: 'ready', pid: 1, restarts: 4242, lastFailure: null, toJSON: () => (made++, { state: 'ready', pid: 1, restarts: 4242, lastFailure: null }) };
      services.events.emit('engine.status', data as never);
      expect(await Promise.all(got)).toEqual(Array.from({ length: 5 }, () => ({ state: 'ready', pid: 1, restarts: 4242, lastFailure: null })));
      expect(made).toBe(1);
      for (const ws of clients) ws.close();
    } finally {
      await server.close();
    }
  });
});

describe('--host 0.0.0.0', () => {
  it('prints the reachable URLs and accepts a page opened under the machine name', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, host: '0.0.0.0', port: 0, log: () => undefined });
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=${server.token}`);
      expect(server.urls).toContain(`http://${os.hostname()}:${server.port}/?token=${server.token}`);
      expect(server.urls.join(' ')).not.toContain('0.0.0.0');
      // Connect over loopback, but as a browser that opened http://<hostname>:port would.
      const host = `${os.hostname()}:${server.port}`;
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`, { Host: host, Origin: `http://${host}` });
      ws.close();
      await expect(
        open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`, { Host: `evil.example:${server.port}`, Origin: `http://evil.example:${server.port}` }),
      ).rejects.toThrow('HTTP 403');
    } finally {
      await server.close();
    }
  });
});

describe('a renderer file that cannot be read', () => {
  it('costs that response only, with a log line', async () => {
    const broken = tempDir();
    mkdirSync(path.join(broken.dir, 'index.html')); // stat finds it, reading it fails with EISDIR
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: broken.dir, port: 0, log: (l) => lines.push(l) });
    try {
      await expect(fetch(`http://127.0.0.1:${server.port}/runs`)).rejects.toThrow();
      expect(lines.join('\n')).toContain('EISDIR');
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      ws.close();
    } finally {
      await server.close();
      broken.cleanup();
    }
  });
});

describe('work a client can queue', () => {
  it('answers requests over the in-flight limit at once with an error, and the others normally', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxInFlight: 2, log: () => undefined });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const answers = new Map<number, Record<string, unknown>>();
      const all = new Promise<void>((resolve) =>
        ws.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
          if (msg.type === 'response') answers.set(msg.id as number, msg);
          if (answers.size === 10) resolve();
        }),
      );
      for (let id = 1; id <= 10; id++) ws.send(JSON.stringify({ type: 'request', id, method: 'engine.ping', params: {} }));
      await all;
      const refused = [...answers.values()].filter((a) => !a.ok);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]).toMatchObject({ error: { code: 'E_BAD_REQUEST', message: expect.stringContaining('2 requests are in flight') } });
      expect(answers.get(1)).toMatchObject({ ok: true });
      ws.close();
    } finally {
      await server.close();
    }
  });

  it('shares the server slots: three clients of 2 each over a server limit of 4 all get their answers, none refused', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxInFlight: 2, maxInFlightTotal: 4, log: () => undefined });
    try {
      const clients = await Promise.all([1, 2, 3].map(() => open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`)));
      const answers: Record<string, unknown>[] = [];
      const all = new Promise<void>((resolve) => {
        for (const ws of clients) {
          ws.on('message', (raw) => {
            const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
            if (msg.type === 'response') answers.push(msg);
            if (answers.length === 6) resolve();
          });
        }
      });
      // Two each, all sent before any is answered: within each connection's limit, over the server's.
      for (const ws of clients) for (const id of [1, 2]) ws.send(JSON.stringify({ type: 'request', id, method: 'engine.ping', params: {} }));
      await all;
      // Over the server's limit, a request waits its turn instead of being refused (re-attack 15).
      expect(answers.filter((a) => !a.ok)).toEqual([]);
      for (const ws of clients) ws.close();
    } finally {
      await server.close();
    }
  });

  it('closes a client whose refused messages pass 4 MiB in 10 s, however few they are (re-attack 16)', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
    try {
      const heavy = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const closed = new Promise<number>((resolve) => heavy.on('close', (code) => resolve(code)));
      // JSON that is no request, 256 KiB each: parsed whole before it is refused. 20 of them, far under 256 refusals.
      const junk = JSON.stringify({ pad: 'x'.repeat(256 * 1024) });
      for (let i = 0; i < 20; i++) heavy.send(junk);
      expect(await closed).toBe(1008);
      expect(lines.find((l) => l.startsWith('closed client'))).toMatch(/: 4\.\d MiB of its messages were refused or failed within 10 s$/);
    } finally {
      await server.close();
    }
  });

  it('counts requests to no method, or with params the contract refuses, as refused: 4 MiB of them close the client (re-attack 17)', async () => {
    for (const method of ['nosuch.method', 'runs.get']) {
      const lines: string[] = [];
      const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
      try {
        const heavy = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
        const closed = new Promise<number>((resolve) => heavy.on('close', (code) => resolve(code)));
        const pad = 'x'.repeat(256 * 1024);
        // One at a time, as each answer comes: never more than one in flight, far under 256 refusals.
        let id = 1;
        heavy.on('message', () => heavy.readyState === heavy.OPEN && id <= 40 && heavy.send(JSON.stringify({ type: 'request', id: id++, method, params: { pad } })));
        heavy.send(JSON.stringify({ type: 'request', id: id++, method, params: { pad } }));
        expect(await closed, method).toBe(1008);
        expect(lines.find((l) => l.startsWith('closed client')), method).toMatch(/: 4\.\d MiB of its messages were refused or failed within 10 s$/);
      } finally {
        await server.close();
      }
    }
  });

  it('counts the bytes of requests that fail as refused: 4 MiB of reports saved to no report close the client (re-attack 18)', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
    try {
      const heavy = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const closed = new Promise<number>((resolve) => heavy.on('close', (code) => resolve(code)));
      const errors: string[] = [];
      // Valid params, one request at a time, each failing in the service (no such report), not in the contract.
      const params = { id: '0001-nosuch', markdown: '#'.repeat(1024 * 1024) };
      let id = 1;
      heavy.on('message', (raw) => {
        const msg = JSON.parse(raw.toString()) as { type: string; ok?: boolean; error?: { code: string } };
        if (msg.type !== 'response') return;
        errors.push(msg.error?.code ?? 'ok');
        if (heavy.readyState === heavy.OPEN && id <= 40) heavy.send(JSON.stringify({ type: 'request', id: id++, method: 'reports.save', params }));
      });
      heavy.send(JSON.stringify({ type: 'request', id: id++, method: 'reports.save', params }));
      expect(await closed).toBe(1008);
      expect(errors.length).toBeLessThanOrEqual(5);
      expect(errors.every((code) => code !== 'ok' && code !== 'E_BAD_REQUEST')).toBe(true);
      expect(lines.find((l) => l.startsWith('closed client'))).toMatch(/: 4\.\d MiB of its messages were refused or failed within 10 s$/);
    } finally {
      await server.close();
    }
  });

  it('closes a client that sends more than 32 MiB in 10 s, even of requests that are answered (re-attack 18)', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
    try {
      const heavy = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const closed = new Promise<[number, string]>((resolve) => heavy.on('close', (code, reason) => resolve([code, reason.toString()])));
      let answered = 0;
      // 1 MiB beside a valid request (the envelope's extra keys are dropped): each is answered, none refused.
      const message = (id: number) => JSON.stringify({ type: 'request', id, method: 'app.info', params: {}, pad: 'x'.repeat(1024 * 1024) });
      let id = 1;
      heavy.on('message', (raw) => {
        const msg = JSON.parse(raw.toString()) as { type: string; ok?: boolean };
        if (msg.type !== 'response') return;
        if (msg.ok) answered++;
        if (heavy.readyState === heavy.OPEN && id <= 60) heavy.send(message(id++));
      });
      heavy.send(message(id++));
      // The close frame says why, as the log does (re-attack 19: it named refused messages whatever the cause).
      expect(await closed).toEqual([1008, expect.stringMatching(/^it sent 32\.\d MiB of messages within 10 s$/)]);
      expect(answered).toBeGreaterThanOrEqual(30);
      expect(answered).toBeLessThanOrEqual(33);
      expect(lines.find((l) => l.startsWith('closed client'))).toMatch(/: it sent 32\.\d MiB of messages within 10 s$/);
    } finally {
      await server.close();
    }
  });

  it('closes a client that sends 1,000 messages in 10 s, even of cheap requests that are answered (re-attacks 20, 21)', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
    try {
      const flood = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const closed = new Promise<[number, string]>((resolve) => flood.on('close', (code, reason) => resolve([code, reason.toString()])));
      let answered = 0;
      let id = 1;
      const next = () => flood.readyState === flood.OPEN && flood.send(JSON.stringify({ type: 'request', id: id++, method: 'engine.ping', params: {} }));
      flood.on('message', (raw) => {
        const msg = JSON.parse(raw.toString()) as { type: string; ok?: boolean };
        if (msg.type !== 'response') return;
        if (msg.ok) answered++;
        next();
      });
      // 16 at a time, each replaced as it is answered: valid, cheap, never refused.
      for (let i = 0; i < 16; i++) next();
      expect(await closed).toEqual([1008, 'it sent 1000 messages within 10 s']);
      expect(answered).toBeGreaterThanOrEqual(984);
      expect(answered).toBeLessThanOrEqual(1_000);
    } finally {
      await server.close();
    }
  }, 30_000);

  it('works on 500 messages a second over all connections, each in turn: reopened connections gain nothing and a new window always opens (re-attacks 21, 22)', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    let flooding = true;
    let answered = 0;
    let reopened = 0;
    // A client that keeps 16 cheap requests in flight and opens a new connection after every 100 answers.
    const flood = async () => {
      while (flooding) {
        const ws = await open(url);
        reopened++;
        let id = 1;
        const next = () => flooding && ws.readyState === ws.OPEN && ws.send(JSON.stringify({ type: 'request', id: id++, method: 'engine.ping', params: {} }));
        let mine = 0;
        ws.on('message', (raw) => {
          if ((JSON.parse(raw.toString()) as { type: string }).type !== 'response') return;
          answered++;
          if (++mine === 100) ws.close();
          else next();
        });
        for (let i = 0; i < 16; i++) next();
        await new Promise((resolve) => ws.once('close', resolve));
      }
    };
    const started = performance.now();
    const flooders = [flood(), flood(), flood(), flood()];
    try {
      // A window reloaded 20 times meanwhile: every connection opens and its first answer comes at once.
      const waits: number[] = [];
      for (let i = 0; i < 20; i++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        const page = await open(url);
        const t0 = performance.now();
        const answer = new Promise((resolve) => page.on('message', (raw) => (JSON.parse(raw.toString()) as { type: string }).type === 'response' && resolve(null)));
        page.send(JSON.stringify({ type: 'request', id: 1, method: 'app.info', params: {} }));
        await answer;
        waits.push(performance.now() - t0);
        page.close();
      }
      const seconds = (performance.now() - started) / 1000;
      expect(waits.length).toBe(20);
      expect(Math.max(...waits)).toBeLessThan(500);
      // The burst (500) and then 500 a second, over every connection the flooders opened.
      expect(answered).toBeLessThanOrEqual(500 + 500 * seconds + 20);
      expect(answered).toBeGreaterThan(250 * seconds);
      expect(reopened).toBeGreaterThan(8);
    } finally {
      flooding = false;
      await server.close();
      await Promise.allSettled(flooders);
    }
  }, 60_000);

  it('refuses a large message of millions of tiny values unread: parsing 16 MiB of them took 1.8 s and 2 GiB (re-attack 23)', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const answer = new Promise<{ ok: boolean; error?: { code: string; message: string } }>((resolve) =>
        ws.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as { type: string; ok: boolean; error?: { code: string; message: string } };
          if (msg.type === 'response') resolve(msg);
        }),
      );
      ws.send(`{"type":"request","id":1,"method":"app.info","params":[${'{},'.repeat(1_000_000)}{}]}`);
      expect(await answer).toEqual({ type: 'response', id: 0, ok: false, error: { code: 'E_BAD_REQUEST', message: 'a message may hold at most 65,536 JSON values: this one holds more, and was not read' } });
      // A long string of that size is one value: read, and answered by the method (app.info takes no params).
      const saved = new Promise<{ ok: boolean; error?: { code: string; message: string } }>((resolve) =>
        ws.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as { type: string; id: number; ok: boolean; error?: { code: string; message: string } };
          if (msg.type === 'response' && msg.id === 2) resolve(msg);
        }),
      );
      ws.send(JSON.stringify({ type: 'request', id: 2, method: 'reports.save', params: { id: '0001-nosuch', markdown: '{},'.repeat(500_000) } }));
      expect((await saved).error?.code).not.toBe('E_BAD_REQUEST');
      ws.close();
    } finally {
      await server.close();
    }
  });

  it('weighs a message by its values: messages under 64 KiB of 20,000 tiny values each wait for the byte budget (re-attack 24)', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const at: number[] = [];
      ws.on('message', (raw) => {
        if ((JSON.parse(raw.toString()) as { type: string }).type === 'response') at.push(performance.now());
      });
      const message = (id: number) => `{"type":"request","id":${id},"method":"app.info","params":[${'{},'.repeat(20_000)}{}]}`;
      expect(message(1).length).toBeLessThan(64 * 1024);
      const t0 = performance.now();
      for (let id = 1; id <= 16; id++) ws.send(message(id));
      await expect.poll(() => at.length, { timeout: 10_000 }).toBe(16);
      // Each weighs about 1.3 MB at 8 MiB a second: 6 at once, then about 6 a second (free, all 16 went at once).
      expect(at.filter((t) => t - t0 < 500).length).toBeLessThanOrEqual(9);
      expect(at[15] - t0).toBeGreaterThan(1000);
      ws.close();
    } finally {
      await server.close();
    }
  }, 30_000);

  it('counts the refusals of messages that waited for their turn, and closes the client at 256 all the same (re-attack 23)', async () => {
    // 100 messages a second: most of 999 sent at once wait their turn.
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined, messageRate: { messages: 100, bytes: 2 ** 30, freeBytes: 0 } });
    try {
      const junk = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      let refusals = 0;
      junk.on('message', (raw) => {
        if ((JSON.parse(raw.toString()) as { type: string }).type === 'response') refusals++;
      });
      const closed = new Promise<[number, string]>((resolve) => junk.on('close', (code, reason) => resolve([code, reason.toString()])));
      for (let i = 0; i < 999; i++) junk.send('x');
      expect(await closed).toEqual([1008, '256 of its messages were refused within 10 s']);
      expect(refusals).toBeLessThanOrEqual(256);
    } finally {
      await server.close();
    }
  }, 30_000);

  it('counts the bytes sent, not the characters: 3-byte characters reach 32 MiB in a third of the messages (re-attack 19)', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
    try {
      const heavy = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const closed = new Promise<number>((resolve) => heavy.on('close', (code) => resolve(code)));
      let answered = 0;
      // 1 Mi characters of 3 bytes each: 3 MiB on the wire.
      const message = (id: number) => JSON.stringify({ type: 'request', id, method: 'app.info', params: {}, pad: '中'.repeat(1024 * 1024) });
      let id = 1;
      heavy.on('message', (raw) => {
        const msg = JSON.parse(raw.toString()) as { type: string; ok?: boolean };
        if (msg.type !== 'response') return;
        if (msg.ok) answered++;
        if (heavy.readyState === heavy.OPEN && id <= 40) heavy.send(message(id++));
      });
      heavy.send(message(id++));
      expect(await closed).toBe(1008);
      expect(answered).toBeGreaterThanOrEqual(10);
      expect(answered).toBeLessThanOrEqual(12);
      expect(lines.find((l) => l.startsWith('closed client'))).toMatch(/: it sent 3[2-6]\.\d MiB of messages within 10 s$/);
    } finally {
      await server.close();
    }
  });

  it('closes a client that draws refusals as fast as it sends, and its flood shuts no other window out (re-attacks 13, 14)', async () => {
    const lines: string[] = [];
    // A small answer budget: refusals counted in it would fill it within the first thousand frames.
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxWaitingAnswerBytes: 64 * 1024, log: (l) => lines.push(l) });
    try {
      const flood = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      (flood as unknown as { _socket: net.Socket })._socket.pause(); // never reads its refusals
      const closed = new Promise<void>((resolve) => flood.on('close', () => resolve()));
      // 7-byte frames that are not JSON, each answered with a refusal of ~120 bytes: the kernel's socket buffers and
      // the socket's own high-water mark take some megabytes of them before any waits in the server.
      for (let i = 0; i < 1_000_000 && !lines.some((l) => l.startsWith('closed client')); i++) {
        flood.send('xxxxxxx');
        if (i % 1000 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      // Within moments: 256 refusals in 10 s (a page of ours draws none), long before the kernel's buffers fill.
      await expect.poll(() => lines.find((l) => l.startsWith('closed client')) ?? '', { timeout: 20_000 }).toMatch(/: 256 of its messages were refused within 10 s$/);
      // Read again, it sees its connection end (a paused socket would not see even that).
      (flood as unknown as { _socket: net.Socket })._socket.resume();
      await closed;
      // Another window is answered, not refused for answers the flooder never read.
      const other = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const answer = new Promise<Record<string, unknown>>((resolve) =>
        other.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
          if (msg.type === 'response') resolve(msg);
        }),
      );
      other.send(JSON.stringify({ type: 'request', id: 1, method: 'app.info', params: {} }));
      expect(await answer).toMatchObject({ ok: true });
      other.close();
    } finally {
      await server.close();
    }
  }, 60_000);

  it('refuses connections over the client limit with 503', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxClients: 2, log: (l) => lines.push(l) });
    try {
      const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
      const first = await open(url);
      const second = await open(url);
      // Windows at work (a silent connection gives its place after a second: re-attack 26).
      for (const ws of [first, second]) expect(await answersAppInfo(ws)).toMatchObject({ ok: true });
      await expect(open(url)).rejects.toThrow('HTTP 503');
      expect(lines.join('\n')).toContain('2 clients are connected already');
      first.close();
      second.close();
    } finally {
      await server.close();
    }
  });
});

// Tried once more: once on a loaded 2-core CI machine this test ran past its 20 s (where, unknown; each wait below
// is now bounded so a connection left open is named by the assertion, not by the timeout).
describe('requests accepted but not yet worked through (re-attack 19)', () => {
  /** Holds every engine.ping until `open()`: requests pile up accepted, as saves behind a slow queue did. */
  function gatePings() {
    const dispatch = services.router.dispatch.bind(services.router);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    services.router.dispatch = async (method, params, caller) => {
      if (method === 'engine.ping') await gate;
      return dispatch(method, params, caller);
    };
    return { open, restore: () => (services.router.dispatch = dispatch) };
  }
  /** engine.ping with `mib` MiB beside it in the envelope. */
  const ping = (id: number, mib: number) => JSON.stringify({ type: 'request', id, method: 'engine.ping', params: {}, pad: 'x'.repeat(mib * 1024 * 1024 - 100) });
  const responses = (ws: WebSocket) => {
    const got: { id: number; ok: boolean; error?: { message: string } }[] = [];
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as { type: string; id: number; ok: boolean; error?: { message: string } };
      if (msg.type === 'response') got.push(msg);
    });
    return got;
  };

  it('hold at most 8 MiB of one connection, its first taken whatever its size, and are taken again once worked through', async () => {
    const gate = gatePings();
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const got = responses(ws);
      for (let id = 1; id <= 5; id++) ws.send(ping(id, 2));
      // Four of 2 MiB fit in 8 MiB; the fifth is refused at once, saying why.
      await expect.poll(() => got.length).toBe(1);
      expect(got[0]).toMatchObject({ id: 5, ok: false, error: { message: expect.stringMatching(/^this connection's requests not yet worked through hold 8\.0 MiB \(at most 8\.0 MiB\); wait for their answers$/) } });
      gate.open();
      await expect.poll(() => got.length).toBe(5);
      expect(got.slice(1).map((g) => [g.id, g.ok])).toEqual([[1, true], [2, true], [3, true], [4, true]]);
      // Worked through, they hold nothing: 8 MiB more are taken.
      for (let id = 6; id <= 9; id++) ws.send(ping(id, 2));
      await expect.poll(() => got.length).toBe(9);
      expect(got.slice(5).every((g) => g.ok)).toBe(true);
      ws.close();
    } finally {
      gate.restore();
      await server.close();
    }
  }, 30_000);

  it('hold at most 64 MiB over all connections, yet a connection holding nothing still has its request taken', async () => {
    const gate = gatePings();
    // Bytes are neither read nor worked on at their rates here (INGRESS_BYTES_PER_SECOND, MESSAGE_BYTES_PER_SECOND): this bound is the one under test.
    const server = await startServer({
      services,
      rendererDir: renderer.dir,
      port: 0,
      log: () => undefined,
      messageRate: { messages: 500, bytes: 2 ** 30, freeBytes: 0 },
      ingressRate: { bytes: 2 ** 30, burst: 2 ** 30, minRead: 0 },
    });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    try {
      // Eight connections of 8 MiB each: 64 MiB held.
      const full = await Promise.all(Array.from({ length: 8 }, () => open(url)));
      const theirs = full.map(responses);
      for (const ws of full) for (let id = 1; id <= 2; id++) ws.send(ping(id, 4));
      const other = await open(url);
      const ours = responses(other);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(theirs.flat()).toEqual([]);
      other.send(ping(1, 1));
      other.send(ping(2, 1));
      // Its first is taken; its second would pass 64 MiB in all.
      await expect.poll(() => ours.length).toBe(1);
      expect(ours[0]).toMatchObject({ id: 2, ok: false, error: { message: expect.stringMatching(/^requests not yet worked through hold 65\.0 MiB over all connections \(at most 64\.0 MiB\)/) } });
      // What others hold is no fault of this window's (re-attack 20): a small request is still taken, and six refused
      // large ones (6 MiB, past the 4 MiB of refusals that close a connection) do not close it.
      other.send(JSON.stringify({ type: 'request', id: 10, method: 'engine.ping', params: {} }));
      for (let id = 11; id <= 16; id++) other.send(ping(id, 1));
      await expect.poll(() => ours.length).toBe(7);
      expect(ours.slice(1).every((g) => !g.ok && g.id >= 11)).toBe(true);
      expect(other.readyState).toBe(WebSocket.OPEN);
      // Connections that go give back what they held, whether their requests ran or not.
      for (const ws of full) ws.terminate();
      await new Promise((resolve) => setTimeout(resolve, 200));
      other.send(ping(3, 1));
      gate.open();
      await expect.poll(() => ours.length).toBe(10);
      expect(ours.filter((g) => g.ok).map((g) => g.id).sort((a, b) => a - b)).toEqual([1, 3, 10]);
      other.close();
    } finally {
      gate.restore();
      await server.close();
    }
  }, 30_000);

  it('share one walk of the workspace among everyone who asks for a list before it starts, each answered with its own id', async () => {
    const dispatch = services.router.dispatch.bind(services.router);
    let walks = 0;
    services.router.dispatch = async (method, params, caller) => {
      if (method === 'runs.list') walks++;
      return dispatch(method, params, caller);
    };
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    try {
      const windows = await Promise.all(Array.from({ length: 8 }, () => open(url)));
      const got = windows.map(responses);
      // 17 each: a page keeps at most 16 on the wire, so a 17th waiting for a list is no page of ours.
      for (const ws of windows) for (let id = 1; id <= 17; id++) ws.send(JSON.stringify({ type: 'request', id, method: 'runs.list', params: {} }));
      await expect.poll(() => got.flat().length, { timeout: 10_000 }).toBe(136);
      for (const g of got) {
        expect(g.find((r) => r.id === 17)).toMatchObject({ ok: false, error: { message: 'this connection waits for 16 answers of the lists already (runs.list is one): wait for them' } });
        expect(g.filter((r) => r.id !== 17).map((r) => [r.id, r.ok]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual(Array.from({ length: 16 }, (_, i) => [i + 1, true]));
      }
      // 128 answered; each walk served all who asked while it waited for its slot.
      expect(walks).toBeLessThanOrEqual(10);
      // A run made before a list is asked for is in that list's answer.
      const id = '20261206-101010-sharedread';
      mkdirSync(path.join(services.workspace.root, 'runs', id), { recursive: true });
      writeFileSync(path.join(services.workspace.root, 'runs', id, 'run.json'), JSON.stringify({ schemaVersion: RUN_SCHEMA_VERSION, id, kind: 'train', status: 'completed', createdAt: '2026-12-06T10:10:10.000Z', config: {} }));
      const answer = await new Promise<{ result: { id: string }[] }>((resolve) => {
        windows[0].on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as { type: string; id: number; result: { id: string }[] };
          if (msg.type === 'response' && msg.id === 99) resolve(msg);
        });
        windows[0].send(JSON.stringify({ type: 'request', id: 99, method: 'runs.list', params: {} }));
      });
      expect(answer.result.map((r) => r.id)).toContain(id);
      rmSync(path.join(services.workspace.root, 'runs', id), { recursive: true, force: true });
      for (const ws of windows) ws.close();
    } finally {
      services.router.dispatch = dispatch;
      await server.close();
    }
  }, 30_000);
});

describe('connections that never finish their headers (re-attack of issue 41, finding 1)', { retry: 1 }, () => {
  it('are closed once the headers limit passes: one that sends nothing, one that trickles a header line by line', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, headersTimeoutMs: 600, log: () => undefined });
    try {
      const { connect } = await import('node:net');
      const closedAfter = (onOpen: (s: net.Socket) => void) =>
        new Promise<number>((resolve) => {
          const t0 = Date.now();
          const socket = connect(server.port, '127.0.0.1', () => onOpen(socket));
          socket.on('error', () => undefined);
          socket.on('close', () => resolve(Date.now() - t0));
          // Still open after 10 s: said as such (and ended here), not left to hang the test.
          setTimeout(() => {
            resolve(Number.POSITIVE_INFINITY);
            socket.destroy();
          }, 10_000).unref();
        });
      let trickle: ReturnType<typeof setInterval> | undefined;
      const [silent, trickled] = await Promise.all([
        closedAfter(() => undefined),
        closedAfter((s) => {
          s.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
          trickle = setInterval(() => s.writable && s.write('X-Slow: 1\r\n'), 100);
        }),
      ]);
      clearInterval(trickle);
      // The limit, plus up to one check interval and the machine's slack; without it both stay open for ever.
      expect(silent).toBeLessThan(5_000);
      expect(trickled).toBeLessThan(5_000);
    } finally {
      await server.close();
    }
  }, 30_000);
});

describe('half-open connections at the connection limit (re-attack 15)', () => {
  it('give way to a new one: a page loads while the limit is full of connections that began nothing', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxConnections: 20, log: () => undefined });
    const { connect } = await import('node:net');
    const silent: net.Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const socket = connect(server.port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.resume(); // sees the server close it
        silent.push(socket);
      }
      await Promise.all(silent.map((s) => new Promise((resolve) => (s.readyState === 'open' ? resolve(null) : s.once('connect', resolve)))));
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Each page request (a fresh connection) is answered, the limit full of silent ones or not.
      for (let i = 0; i < 3; i++) {
        const status = await new Promise<number>((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port: server.port, path: '/', agent: false }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
        });
        // Answered (this test serves no renderer files, so not 200): a connection refused would reset instead.
        expect(status).toBeGreaterThan(0);
      }
      // The one that gave way was the oldest (each page request, done, freed its own place for the next).
      await expect.poll(() => silent[0].closed, { timeout: 5_000 }).toBe(true);
      expect(silent.slice(1).filter((s) => s.closed)).toEqual([]);
    } finally {
      for (const s of silent) s.destroy();
      await server.close();
    }
  });
});

describe('connections that keep asking at the connection limit (re-attack 16)', () => {
  /** A raw keep-alive connection without the token that asks for a file, reads the answer, and asks again every 200 ms. */
  function stranger(port: number, connect: typeof net.connect) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.resume();
    const ask = () => socket.writable && socket.write('HEAD /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    socket.once('connect', ask);
    const timer = setInterval(ask, 200);
    socket.once('close', () => clearInterval(timer));
    return socket;
  }

  const pageLoad = (port: number, token: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/?token=${token}`, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
    });

  it('give way to a page load: keep-alive requests without the token do not hold a place for ever', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxConnections: 20, log: () => undefined });
    const { connect } = await import('node:net');
    const strangers: net.Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) strangers.push(stranger(server.port, connect));
      // Each has had answers: none is silent any more.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(strangers.filter((s) => s.closed)).toEqual([]);
      for (let i = 0; i < 5; i++) expect(await pageLoad(server.port, server.token)).toBeGreaterThan(0);
      // Each page load took a stranger's place, the one idle longest; the page loads' own went as they ended.
      await expect.poll(() => strangers.filter((s) => s.closed).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
    } finally {
      for (const s of strangers) s.destroy();
      await server.close();
    }
  });

  it('give way to a page load when they are WebSocket upgrades without the token that never close their side (re-attack 17)', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxConnections: 20, log: () => undefined });
    const { connect } = await import('node:net');
    const refused: net.Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const socket = connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true });
        socket.on('error', () => undefined);
        socket.resume(); // reads the refusal, never ends its own side
        socket.once('connect', () => socket.write('GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'));
        refused.push(socket);
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (let i = 0; i < 3; i++) expect(await pageLoad(server.port, server.token)).toBeGreaterThan(0);
      // Refused, they are closed within a second whether their peer closes its side or not: this process holds none
      // of the server's ends waiting for the peers' (FIN-WAIT-2), as it held 512 once; the kernel's orphans are not ours.
      const waiting = () => execFileSync('ss', ['-Htnp', 'state', 'fin-wait-2', `( sport = :${server.port} )`], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`pid=${process.pid},`)).length;
      await expect.poll(waiting, { timeout: 5_000 }).toBe(0);
    } finally {
      for (const s of refused) s.destroy();
      await server.close();
    }
  });

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /**
   * The limit (20) full of strangers made by `stranger`, then a page's connection that has not yet asked (a browser
   * opens one ahead of its request), one more stranger, and the page's request: what the page was answered. The
   * connection taken for the stranger would end with nothing.
   */
  async function pageAmongStrangers(stranger: (port: number) => net.Socket, settleMs: number): Promise<string> {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxConnections: 20, log: () => undefined });
    const { connect } = await import('node:net');
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) sockets.push(stranger(server.port));
      await pause(settleMs);
      const page = connect(server.port, '127.0.0.1');
      let answer = '';
      page.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      const ended = new Promise<string>((resolve) => page.once('close', () => resolve(answer)));
      page.on('error', () => undefined);
      await new Promise((resolve) => page.once('connect', resolve));
      await pause(50);
      sockets.push(stranger(server.port));
      await pause(50);
      page.write(`GET /?token=${server.token} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      return await ended;
    } finally {
      for (const s of sockets) s.destroy();
      await server.close();
    }
  }

  it('give way before a new connection does: a page that connected and has not yet asked keeps its place in a stream of refused upgrades (re-attack 18)', async () => {
    const { connect } = await import('node:net');
    // Each answered, and held for its linger.
    const refusedUpgrade = (port: number) => {
      const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      socket.on('error', () => undefined);
      socket.resume();
      socket.once('connect', () => socket.write('GET /api?token=x HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'));
      return socket;
    };
    // Answered (this test serves no renderer page, so not 200).
    expect(await pageAmongStrangers(refusedUpgrade, 150)).toMatch(/^HTTP\/1\.1 \d{3} /);
  });

  it('give way before a new connection does when they are requests whose answers nobody reads (re-attack 19)', async () => {
    // A file far larger than the kernel's socket buffers: a stranger that never reads keeps its answer running.
    writeFileSync(path.join(renderer.dir, 'big.js'), Buffer.alloc(32 * 1024 * 1024, 'x'));
    const { connect } = await import('node:net');
    const busyStranger = (port: number) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.pause(); // never reads the answer
      socket.once('connect', () => socket.write('GET /big.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
      return socket;
    };
    expect(await pageAmongStrangers(busyStranger, 300)).toMatch(/^HTTP\/1\.1 \d{3} /);
  });

  it('log the peer of a connection reset while refused, and only the first few of a stream (re-attack 18)', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: (l) => lines.push(l) });
    const { connect } = await import('node:net');
    try {
      const resets = Array.from({ length: 40 }, async () => {
        const socket = connect(server.port, '127.0.0.1');
        socket.on('error', () => undefined);
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write('GET /api?token=x HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
        await new Promise((resolve) => socket.once('data', resolve));
        socket.resetAndDestroy();
      });
      await Promise.all(resets);
      await expect.poll(() => lines.filter((l) => l.startsWith('connection from')).length, { timeout: 5_000 }).toBe(20);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const said = lines.filter((l) => l.startsWith('connection from'));
      expect(said).toHaveLength(20);
      for (const line of said) expect(line).toMatch(/^connection from 127\.0\.0\.1:\d+: read ECONNRESET$/);
    } finally {
      await server.close();
    }
  });

  it('a window of ours that showed the token keeps its place while strangers come and go', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxConnections: 20, log: () => undefined });
    const { connect } = await import('node:net');
    const strangers: net.Socket[] = [];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // Our window: one kept-alive connection that showed the token, idle now.
      expect(await new Promise<number>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: server.port, path: `/?token=${server.token}`, agent }, (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
        }).on('error', reject);
      })).toBeGreaterThan(0);
      const ours = [...(agent.freeSockets[Object.keys(agent.freeSockets)[0]] ?? [])][0] as net.Socket;
      expect(ours).toBeDefined();
      // 40 strangers for 19 free places: each new one takes an older stranger's place, never ours.
      for (let i = 0; i < 40; i++) {
        strangers.push(stranger(server.port, connect));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(ours.destroyed).toBe(false);
      expect(strangers.filter((s) => !s.closed).length).toBeLessThanOrEqual(19);
    } finally {
      for (const s of strangers) s.destroy();
      agent.destroy();
      await server.close();
    }
  });
});

describe('long requests of other windows (re-attacks 16, 17)', () => {
  /**
   * Windows send `perWindow` previews each of a long CSV (previews run one at a time, so each holds its slot while the
   * ones before it run); then another window asks app.info. Returns how many of their answers came while it waited.
   */
  async function theirAnswersWhileOursWaited(windows: number, perWindow: number, ask = 'preview', maxInFlightTotal = 8, ours = 'app.info'): Promise<number> {
    const rows = Array.from({ length: 300_000 }, (_, i) => `${i % 10},${i * 0.25},${i % 13},${i % 7}`).join('\n');
    writeFileSync(path.join(services.workspace.root, 'sources', 'long-preview.csv'), `label,a,b,c\n${rows}\n`);
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxInFlightTotal, log: () => undefined });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    try {
      const busy = await Promise.all(Array.from({ length: windows }, () => open(url)));
      let theirs = 0;
      for (const ws of busy) ws.on('message', (raw) => ((JSON.parse(raw.toString()) as { type: string }).type === 'response' ? theirs++ : undefined));
      const source = { kind: 'csv', path: 'sources/long-preview.csv', label: 'label', labelDtype: 'int32' };
      const request = ask === 'preview' ? { method: 'datasets.inspect', params: { source } } : { method: ask, params: {} };
      for (const ws of busy) for (let id = 1; id <= perWindow; id++) ws.send(JSON.stringify({ type: 'request', id, ...request }));
      await new Promise((resolve) => setTimeout(resolve, 20));
      const other = await open(url);
      const answered = new Promise<number>((resolve) =>
        other.on('message', (raw) => {
          if ((JSON.parse(raw.toString()) as { type: string }).type === 'response') resolve(theirs);
        }),
      );
      const before = theirs;
      other.send(JSON.stringify({ type: 'request', id: 1, method: ours, params: {} }));
      const during = (await answered) - before;
      for (const ws of [...busy, other]) ws.close();
      return during;
    } finally {
      await server.close();
    }
  }

  it('leave room for another window: it is answered at once, not after one of theirs ends', async () => {
    // Two windows at their limit ran every slot, and another waited for one of theirs to end (12-16 s there).
    expect(await theirAnswersWhileOursWaited(2, 8), 'their answers while ours waited').toBe(0);
  }, 60_000);

  it('run in slots of their own: a cheap request is answered at once however many connections send them', async () => {
    // Eight connections of one token holder, one preview each: each has nothing else running, so the per-connection
    // cap and the slots kept for idle connections let them take every shared slot (13 s waits there).
    expect(await theirAnswersWhileOursWaited(8, 1), 'their answers while ours waited').toBe(0);
  }, 60_000);

  it('run one at a time per connection: one connection of heavy reads cannot keep two going (re-attack 21)', async () => {
    const dispatch = services.router.dispatch.bind(services.router);
    let running = 0;
    let most = 0;
    services.router.dispatch = async (method, params, caller) => {
      if (method !== 'reports.list' && method !== 'runs.trace') return dispatch(method, params, caller);
      most = Math.max(most, ++running);
      try {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return await dispatch(method, params, caller);
      } finally {
        running--;
      }
    };
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      let answers = 0;
      ws.on('message', (raw) => ((JSON.parse(raw.toString()) as { type: string }).type === 'response' ? answers++ : undefined));
      for (let id = 1; id <= 8; id++) ws.send(JSON.stringify({ type: 'request', id, method: 'runs.trace', params: { runId: 'nosuch' } }));
      await expect.poll(() => answers, { timeout: 10_000 }).toBe(8);
      expect(most, 'heavy reads of one connection at once').toBe(1);
      ws.close();
    } finally {
      services.router.dispatch = dispatch;
      await server.close();
    }
  }, 30_000);

  it('leave a page its lists at once: the lists are walked in slots of their own, not behind the previews of every window (re-attack 20)', async () => {
    // Eight windows with eight previews each fill the heavy slots' turn; the page's list waited behind one of each.
    expect(await theirAnswersWhileOursWaited(8, 8, 'preview', 64, 'runs.list'), 'their answers while our list waited').toBe(0);
  }, 60_000);

  it('run in slots of their own when they walk the workspace: waves of runs.list over 200 runs keep no cheap request waiting (re-attack 18)', async () => {
    // 200 runs, each a real benchmark run's files under its own id.
    const from = path.join(__dirname, '../fixtures/runs-v1/engine-benchmark/runs/20261127-033427-8b1a8f');
    const record = JSON.parse(readFileSync(path.join(from, 'run.json'), 'utf8')) as { id: string };
    const made: string[] = [];
    for (let i = 0; i < 200; i++) {
      const id = `20261127-0335${String(i).padStart(3, '0')}-listwave`;
      const dir = path.join(services.workspace.root, 'runs', id);
      cpSync(from, dir, { recursive: true });
      writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ ...record, id }));
      made.push(dir);
    }
    // How many lists run at once: 64 of them, each reading every run and answered together, held the event loop
    // (and the file system's threads) from a cheap request for 6 s once per wave there.
    const dispatch = services.router.dispatch.bind(services.router);
    let running = 0;
    let most = 0;
    services.router.dispatch = async (method, params, caller) => {
      if (method !== 'runs.list') return dispatch(method, params, caller);
      most = Math.max(most, ++running);
      try {
        return await dispatch(method, params, caller);
      } finally {
        running--;
      }
    };
    try {
      // 12 windows of one token holder, 8 lists each: 96, more than the 64 shared slots.
      expect(await theirAnswersWhileOursWaited(12, 8, 'runs.list', 64), 'their answers while ours waited').toBe(0);
      expect(most, 'lists at once').toBeLessThanOrEqual(4);
      expect(most, 'lists at once').toBeGreaterThanOrEqual(1);
    } finally {
      services.router.dispatch = dispatch;
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('answers a client has asked for (re-attack 9: a reading client was dropped)', () => {
  const RUN = '20261206-000000-bigrun';
  beforeAll(() => {
    // A real record made 1 MiB by a long note in its config: each runs.get answer is that big.
    mkdirSync(path.join(services.workspace.root, 'runs', RUN), { recursive: true });
    const record = { schemaVersion: RUN_SCHEMA_VERSION, id: RUN, kind: 'train', status: 'completed', createdAt: '2026-12-06T00:00:00.000Z', config: { spec: { family: 'mlp' }, note: 'x'.repeat(1 << 20) } };
    writeFileSync(path.join(services.workspace.root, 'runs', RUN, 'run.json'), JSON.stringify(record));
  });
  const ask = (ws: WebSocket, n: number) => {
    for (let id = 1; id <= n; id++) ws.send(JSON.stringify({ type: 'request', id, method: 'runs.get', params: { id: RUN } }));
  };

  it('are all sent, in turn, to a client that reads: 32 answers of 1 MiB pass a 4 MiB limit on unsent bytes without a drop', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxBufferedBytes: 4 << 20, log: (l) => lines.push(l) });
    try {
      const ws = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const answers: Record<string, unknown>[] = [];
      const all = new Promise<void>((resolve, reject) => {
        ws.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
          if (msg.type === 'response') answers.push(msg);
          if (answers.length === MAX_IN_FLIGHT) resolve();
        });
        ws.on('close', () => reject(new Error(`closed after ${answers.length} answers: ${lines.join('\n')}`)));
      });
      ask(ws, MAX_IN_FLIGHT);
      await all;
      expect(answers.every((a) => a.ok === true), JSON.stringify(answers.find((a) => !a.ok))).toBe(true);
      expect(lines.filter((l) => l.startsWith('dropped'))).toEqual([]);
      ws.close();
    } finally {
      await server.close();
    }
  }, 60_000);

  it('wait for a client that does not read only so long: it is dropped and its slots go to the others', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxBufferedBytes: 4 << 20, maxInFlight: 8, maxInFlightTotal: 8, answerStallMs: 500, log: (l) => lines.push(l) });
    try {
      const idle = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      (idle as unknown as { _socket: net.Socket })._socket.pause(); // never read again
      ask(idle, 8);
      await expect.poll(() => lines.find((l) => l.startsWith('dropped client')) ?? '', { timeout: 20_000 }).toMatch(/with messages waiting, it is not reading its socket/);
      // Its eight slots were the server's all: a window that reads gets its answer.
      const other = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const answer = new Promise<Record<string, unknown>>((resolve) =>
        other.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
          if (msg.type === 'response') resolve(msg);
        }),
      );
      other.send(JSON.stringify({ type: 'request', id: 1, method: 'engine.ping', params: {} }));
      expect(await answer).toMatchObject({ ok: true });
      other.close();
    } finally {
      await server.close();
    }
  }, 60_000);
});

describe('bytes read from the sockets (re-attack 25)', () => {
  it('are read at the ingress rate over all connections, before they are messages, while another window is still answered', async () => {
    // 1 MiB a second, 64 KiB at once: a 3 MiB message takes about 2.9 s to be read whole (unmetered: tens of ms).
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined, ingressRate: { bytes: 1024 * 1024, burst: 64 * 1024, minRead: 1024 } });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    const answered = (ws: WebSocket, id: number) =>
      new Promise<number>((resolve) => {
        const t0 = performance.now();
        ws.on('message', (raw) => {
          const msg = JSON.parse(raw.toString()) as { type: string; id: number };
          if (msg.type === 'response' && msg.id === id) resolve(performance.now() - t0);
        });
      });
    try {
      const [big, window] = await Promise.all([open(url), open(url)]);
      const bigDone = answered(big, 1);
      big.send(JSON.stringify({ type: 'request', id: 1, method: 'engine.ping', params: {}, pad: 'x'.repeat(3 * 1024 * 1024) }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The other window's small request waits for one read of the large one's connection, not for all of it.
      const windowDone = answered(window, 2);
      window.send(JSON.stringify({ type: 'request', id: 2, method: 'engine.ping', params: {} }));
      expect(await windowDone).toBeLessThan(1000);
      expect(await bigDone).toBeGreaterThan(2000);
      big.close();
      window.close();
    } finally {
      await server.close();
    }
  }, 30_000);

  it('close a connection whose message comes in more pieces than a message may, and not one that sends many whole messages', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined, maxReadsPerMessage: 64 });
    try {
      // Many whole messages, each in its own read: the count starts again at each.
      const window = await open(`ws://127.0.0.1:${server.port}/api?token=${server.token}`);
      const answers: number[] = [];
      window.on('message', (raw) => {
        const msg = JSON.parse(raw.toString()) as { type: string; id: number };
        if (msg.type === 'response') answers.push(msg.id);
      });
      for (let id = 1; id <= 100; id++) {
        window.send(JSON.stringify({ type: 'request', id, method: 'engine.ping', params: {} }));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await expect.poll(() => answers.length).toBe(100);
      // One message of 1,000 bytes written a byte at a time: the memory ws keeps for each read is not kept for ever.
      const { connect } = await import('node:net');
      const closed = await new Promise<string>((resolve) => {
        const socket = connect(server.port, '127.0.0.1');
        let got = Buffer.alloc(0);
        let trickle: ReturnType<typeof setInterval> | undefined;
        // The server cuts the connection a second after its close frame: a byte of ours unread then makes it a reset.
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearInterval(trickle);
          resolve(got.toString('latin1'));
        });
        socket.on('data', (d: Buffer) => {
          got = Buffer.concat([got, d]);
          if (trickle || !got.includes('\r\n\r\n')) return;
          // A masked text frame of 1,000 bytes (mask key 0), its header now and its payload a byte every 3 ms.
          socket.write(Buffer.from([0x81, 0x80 | 126, 0x03, 0xe8, 0, 0, 0, 0]));
          trickle = setInterval(() => socket.writable && socket.write('x'), 3);
        });
        socket.write(
          `GET /api?token=${server.token} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
        );
        setTimeout(() => socket.destroy(), 10_000).unref();
      });
      expect(closed).toContain('a message came in more than 64 pieces');
      expect(window.readyState).toBe(WebSocket.OPEN);
      window.close();
    } finally {
      await server.close();
    }
  }, 30_000);
});

describe('the last places at the connection limit (re-attack 26)', () => {
  /** A masked text frame (mask key 0) of `text`, under 126 bytes. */
  const smallFrame = (text: string) => Buffer.concat([Buffer.from([0x81, 0x80 | text.length, 0, 0, 0, 0]), Buffer.from(text)]);
  /**
   * A raw WebSocket with the token that has written `bytes` of a masked 1 MiB text frame and nothing more; with
   * `whole`, a whole small request before it, as a window at work in the middle of a large save.
   */
  async function halfSent(port: number, token: string, bytes: number, whole = false) {
    const { connect } = await import('node:net');
    return new Promise<net.Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('error', reject);
      socket.on('data', function upgraded(d: Buffer) {
        got += d.toString('latin1');
        if (!got.includes('\r\n\r\n')) return;
        socket.off('data', upgraded);
        if (!got.startsWith('HTTP/1.1 101')) return reject(new Error(got.split('\r\n')[0]));
        if (whole) socket.write(smallFrame(JSON.stringify({ type: 'request', id: 1, method: 'engine.ping', params: {} })));
        // 127 and a 64-bit length: 1 MiB; mask key 0. Apart, so the whole one is read first.
        setTimeout(() => {
          socket.write(Buffer.from([0x81, 0x80 | 127, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0]));
          socket.write(Buffer.alloc(bytes, 'x'), () => resolve(socket));
        }, whole ? 100 : 0);
      });
      socket.write(`GET /api?token=${token} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    });
  }
  const closedSoon = (socket: net.Socket) => new Promise<boolean>((resolve) => {
    if (socket.destroyed) return resolve(true);
    socket.once('close', () => resolve(true));
    setTimeout(() => resolve(false), 3000).unref();
  });

  it('go to a new window in place of the connection with the most of its first message unfinished, never in place of a window at work', async () => {
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxClients: 3, log: (l) => lines.push(l) });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    try {
      const first = await open(url);
      expect(await answersAppInfo(first)).toMatchObject({ ok: true });
      const light = await halfSent(server.port, server.token, 128 * 1024);
      const heavy = await halfSent(server.port, server.token, 512 * 1024);
      // Wait until the server has read what they wrote (the meter lets 16 MiB through at once).
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = await open(url);
      expect(await closedSoon(heavy)).toBe(true);
      expect(light.destroyed).toBe(false);
      expect(await answersAppInfo(second)).toMatchObject({ ok: true });
      const third = await open(url);
      expect(await closedSoon(light)).toBe(true);
      expect(await answersAppInfo(third)).toMatchObject({ ok: true });
      // Three windows whose messages came whole: the fourth is refused, none of them is closed.
      await expect(open(url)).rejects.toThrow('HTTP 503');
      for (const ws of [first, second, third]) expect(ws.readyState).toBe(WebSocket.OPEN);
      expect(lines.join('\n')).toContain('took the place of one in the middle of its first message (524,302 bytes of it read)');
      for (const ws of [first, second, third]) ws.close();
    } finally {
      await server.close();
    }
  }, 30_000);

  it('never go in place of a window that has sent a whole message, however much of its next one is unfinished (re-attack 27)', async () => {
    // The give-way once took the connection with the most of any unfinished message: a window in the middle of a
    // 2 MB save, read in pieces while the places' other holders kept their messages under 64 KiB.
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxClients: 2, log: (l) => lines.push(l) });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    try {
      const other = await open(url);
      expect(await answersAppInfo(other)).toMatchObject({ ok: true });
      const saving = await halfSent(server.port, server.token, 512 * 1024, true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await expect(open(url)).rejects.toThrow('HTTP 503');
      expect(await closedSoon(saving)).toBe(false);
      expect(other.readyState).toBe(WebSocket.OPEN);
      expect(lines.join('\n')).not.toContain('took the place');
      saving.destroy();
      other.close();
    } finally {
      await server.close();
    }
  }, 30_000);

  it('go to a new window in place of a connection that has sent no whole message a second after it opened', async () => {
    // One paused by the ingress meter before its first read, whose client then left, is one of these.
    const lines: string[] = [];
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, maxClients: 2, log: (l) => lines.push(l) });
    const url = `ws://127.0.0.1:${server.port}/api?token=${server.token}`;
    try {
      const talking = await open(url);
      expect(await answersAppInfo(talking)).toMatchObject({ ok: true });
      const silent = await open(url);
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const silentClosed = new Promise<boolean>((resolve) => silent.once('close', () => resolve(true)));
      const next = await open(url);
      expect(await silentClosed).toBe(true);
      expect(await answersAppInfo(next)).toMatchObject({ ok: true });
      expect(talking.readyState).toBe(WebSocket.OPEN);
      expect(lines.join('\n')).toContain('took the place of one that had sent no whole message since it opened');
      // The two left have both talked: the next is refused.
      await expect(open(url)).rejects.toThrow('HTTP 503');
      talking.close();
      next.close();
    } finally {
      await server.close();
    }
  }, 30_000);
});
