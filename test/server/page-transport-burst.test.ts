// The page's WebSocket transport against a real server: a page that asks for many things at once (the Benchmarks
// area opens every benchmark run) keeps at most PAGE_CALLS_IN_FLIGHT on the wire, so none is refused by the server's
// per-connection limit of 32, and the rest wait their turn in the page.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import type { Services } from '../../src-main/core/services';
import { startServer } from '../../src-main/server/serve';
import { createWsTransport } from '../../src-renderer/transport/ws-transport';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
const renderer = tempDir();

beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  // The page's transport uses the browser's WebSocket; here the ws package's, which has the same handlers.
  (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
});

afterAll(async () => {
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
  await cleanup?.();
  renderer.cleanup();
});

describe('the page transport', () => {
  it('answers 60 calls made at once, none refused for the in-flight limit, each with its own answer', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `20261206-1100${String(i).padStart(2, '0')}-burst`);
    for (const id of ids) {
      mkdirSync(path.join(services.workspace.root, 'runs', id), { recursive: true });
      writeFileSync(path.join(services.workspace.root, 'runs', id, 'run.json'), JSON.stringify({ schemaVersion: RUN_SCHEMA_VERSION, id, kind: 'train', status: 'completed', createdAt: '2026-12-06T11:00:00.000Z', config: {} }));
    }
    const server = await startServer({ services, rendererDir: renderer.dir, port: 0, log: () => undefined });
    const transport = createWsTransport({ url: `ws://127.0.0.1:${server.port}/api?token=${server.token}` });
    try {
      const outcomes = await Promise.all(ids.map((id) => transport.call('runs.get', { id })));
      expect(outcomes.filter((o) => !o.ok).map((o) => !o.ok && o.error.message)).toEqual([]);
      expect(outcomes.map((o) => o.ok && (o.result as { record: { id: string } }).record.id)).toEqual(ids);
    } finally {
      transport.close();
      await server.close();
    }
  }, 60_000);
});
