// A real `trainbench serve` process against what any web page (or a broken
// client) can send it: nothing from the network may end the process.
import net from 'node:net';

import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { MAX_MESSAGE_BYTES } from '../../src-main/server/ws-limits';
import { startServeProcess, type ServeProcess } from '../helpers/serve-process';
import { tempDir } from '../helpers/temp-dir';

const workspace = tempDir();
let serve: ServeProcess;
let port: number;
let token: string;

// A fresh process per test, so each attack is judged on its own.
beforeEach(async () => {
  serve = await startServeProcess(workspace.dir);
  const url = new URL(serve.url);
  port = Number(url.port);
  token = url.searchParams.get('token')!;
});

afterEach(async () => {
  await serve?.stop();
});

afterAll(() => workspace.cleanup());

/** Sends one raw WebSocket upgrade request and returns what the server answered before closing. */
function rawUpgrade(target: string, extraHeaders = ''): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.write(
      `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extraHeaders}\r\n`,
    );
    setTimeout(() => socket.end(), 500);
  });
}

function connect(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api?token=${token}`, { origin: `http://127.0.0.1:${port}` });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function closeCode(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => {
    ws.on('error', () => undefined);
    ws.once('close', (code) => resolve(code));
  });
}

/** The process is still there and still answers contract requests. */
async function expectAlive(): Promise<void> {
  expect(serve.child.exitCode).toBeNull();
  const ws = await connect();
  const answer = await new Promise<Record<string, unknown>>((resolve) => {
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (msg.type === 'response') resolve(msg);
    });
    ws.send(JSON.stringify({ type: 'request', id: 1, method: 'engine.ping', params: {} }));
  });
  expect(answer).toMatchObject({ id: 1, ok: true });
  ws.close();
}

describe('serve mode under hostile input', () => {
  it('answers tokenless upgrades to odd targets with an error and keeps running', async () => {
    const targets = ['//', '//evil.example/api', '/api?token=%zz%', 'http://x/api', '/api?token', '/api/../api', '/' + 'a'.repeat(6000)];
    for (const target of targets) {
      const answer = await rawUpgrade(target);
      expect(answer, target).toMatch(/^HTTP\/1\.1 (400|403|404|431)/);
    }
    await expectAlive();
  });

  it('survives a client that resets during the handshake', async () => {
    for (let i = 0; i < 20; i++) {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(`GET /api?token=${token} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
      socket.resetAndDestroy();
    }
    await expectAlive();
  });

  it('closes a connection that sends invalid UTF-8 with 1007 and keeps serving others', async () => {
    const ws = await connect();
    const closed = closeCode(ws);
    ws.send(Buffer.from([0xc3, 0x28, 0xff]), { binary: false });
    expect(await closed).toBe(1007);
    await expectAlive();
  });

  it('closes a connection whose message is over the size limit with 1009 and keeps serving others', async () => {
    const ws = await connect();
    const closed = closeCode(ws);
    ws.send('x'.repeat(MAX_MESSAGE_BYTES + 1));
    expect(await closed).toBe(1009);
    await expectAlive();
  });

  it('closes a connection that sends a malformed frame with 1002 and keeps serving others', async () => {
    const ws = await connect();
    const closed = closeCode(ws);
    // A masked frame with reserved bits set and an unknown opcode.
    (ws as unknown as { _socket: net.Socket })._socket.write(Buffer.from([0xf3, 0x80, 1, 2, 3, 4]));
    expect(await closed).toBe(1002);
    await expectAlive();
  });
});
