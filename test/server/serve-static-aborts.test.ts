// Attack round 5, finding A: a static file's client that drops the connection mid-file, thousands of times over,
// left the file open each time until serve mode ran out of descriptors (no token needed). Each aborted response
// now closes its file, and a client that stops reading is closed after the stall limit.
import { readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Services } from '../../src-main/core/services';
import { startServer } from '../../src-main/server/serve';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
const renderer = tempDir();

beforeAll(async () => {
  const t = await testServices();
  services = t.services;
  cleanup = t.cleanup;
  writeFileSync(path.join(renderer.dir, 'index.html'), '<!doctype html><title>t</title>');
  // Larger than a socket's buffers, so a response is still being read from the file when its client goes.
  writeFileSync(path.join(renderer.dir, 'big.js'), Buffer.alloc(8 << 20, 0x61));
});

afterAll(async () => {
  await cleanup?.();
  renderer.cleanup();
});

const openFds = () => readdirSync('/proc/self/fd').length;

/** A GET of the big file on a raw socket, dropped after its first bytes. */
function aborted(port: number): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('GET /big.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    s.once('data', () => {
      s.destroy();
      resolve();
    });
    s.on('error', () => resolve());
  });
}

describe.skipIf(process.platform !== 'linux')('static files whose clients go away', () => {
  it('close the file of every aborted response: 300 aborts leave no descriptor behind', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      await aborted(server.port); // the first opens what the server keeps open anyway
      await new Promise((r) => setTimeout(r, 200));
      const before = openFds();
      for (let i = 0; i < 300; i++) await aborted(server.port);
      await new Promise((r) => setTimeout(r, 500));
      // Without the fix: one more descriptor per abort (300).
      expect(openFds() - before).toBeLessThan(20);
    } finally {
      await server.close();
    }
  });

  // Round 6, finding 2: a response queued behind another on its connection has no socket and never closed its file
  // when the client went: 18,000 such connections used up the descriptors.
  it('close the files of pipelined responses when their connection goes: 200 connections leave no descriptor behind', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    const twice = (count: number) =>
      new Promise<void>((resolve) => {
        const s = net.connect(server.port, '127.0.0.1', () => s.write('GET /big.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(count)));
        s.once('data', () => {
          s.destroy();
          resolve();
        });
        s.on('close', () => resolve());
        s.on('error', () => resolve());
      });
    try {
      await twice(2);
      await new Promise((r) => setTimeout(r, 200));
      const before = openFds();
      for (let i = 0; i < 100; i++) await twice(2);
      for (let i = 0; i < 100; i++) await twice(3);
      await new Promise((r) => setTimeout(r, 500));
      expect(openFds() - before).toBeLessThan(20);
    } finally {
      await server.close();
    }
  });

  it('close a connection whose client stops reading, after the stall limit', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, staticStallMs: 300, log: () => undefined });
    try {
      // Paused past the limit, then read again: the server had cut the response, so the file never arrives whole.
      const received = await new Promise<number>((resolve) => {
        let bytes = 0;
        const s = net.connect(server.port, '127.0.0.1', () => {
          s.write('GET /big.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
          s.pause();
          setTimeout(() => s.resume(), 1500);
        });
        s.on('data', (d: Buffer) => (bytes += d.length));
        s.on('close', () => resolve(bytes));
        s.on('error', () => undefined);
        setTimeout(() => {
          s.destroy();
          resolve(-1);
        }, 8000);
      });
      expect(received, 'closed by the server, not by the test').toBeGreaterThan(0);
      expect(received).toBeLessThan(8 << 20);
    } finally {
      await server.close();
    }
  });

  it('close a connection that sends more requests at once than a browser would, before buffering their files', async () => {
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    try {
      const closed = await new Promise<boolean>((resolve) => {
        const s = net.connect(server.port, '127.0.0.1', () => {
          s.write('GET /big.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(30));
        });
        s.pause(); // never read
        s.on('close', () => resolve(true));
        s.on('error', () => resolve(true));
        // A paused socket sees its end only once read: look from the server's side instead, by writing.
        setTimeout(() => {
          s.resume();
          setTimeout(() => resolve(s.destroyed), 1000);
        }, 500);
      });
      expect(closed).toBe(true);
    } finally {
      await server.close();
    }
  });
});
