// The engine host as a separate process: requests, crash isolation, restart.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { rejection } from '../helpers/rejection';
import type { EngineStatusEvent } from '../../src-main/api/events';
import { EngineClient } from '../../src-main/engine/engine-client';
import { HOST_DEBUG_ENV } from '../../src-main/engine/host-protocol';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';

beforeAll(requireBuilt);

const clients: EngineClient[] = [];
function client(env: Record<string, string> = {}, extra = {}): EngineClient {
  const c = new EngineClient({ entry: HOST_ENTRY, env, restartDelaysMs: [20], ...extra });
  clients.push(c);
  return c;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.stop()));
});

describe('engine supervisor', () => {
  it('runs the addon in a separate process', async () => {
    const engine = client();
    const version = await engine.version();
    expect(version.hostPid).not.toBe(process.pid);
    expect(engine.status()).toMatchObject({ state: 'ready', pid: version.hostPid, restarts: 0 });
    const devices = await engine.devices();
    expect(devices.cpu.logicalCores).toBeGreaterThan(0);
  });

  it('passes native error codes through the process boundary', async () => {
    const err = await rejection(engine_resolve(client(), 'tpu:0'));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain("'tpu:0'");
  });

  it('survives a native abort: the caller is told why, the host restarts, the next request works', async () => {
    const engine = client({ [HOST_DEBUG_ENV]: '1' });
    const before = await engine.version();
    const states: EngineStatusEvent[] = [];
    engine.onStatus((s) => states.push(s));

    const err = await rejection(engine.debugAbort());
    expect(err.code).toBe('E_ENGINE_CRASHED');
    expect(err.message).toMatch(/SIGABRT|code 134/);
    expect(err.message).toContain('debug.abort');

    const after = await engine.version();
    expect(after.hostPid).not.toBe(before.hostPid);
    expect(engine.status()).toMatchObject({ state: 'ready', restarts: 1 });
    expect(engine.status().lastFailure).toMatch(/SIGABRT|code 134/);
    expect(states.map((s) => s.state)).toEqual(['restarting', 'restarting', 'ready']);
  });

  it('refuses the debug crash entry point in a normal host', async () => {
    const err = await rejection(client().debugAbort());
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toMatch(/debug mode/);
  });

  it('gives up after repeated crashes and says so', async () => {
    const engine = client({ [HOST_DEBUG_ENV]: '1' }, { maxRestarts: 2 });
    for (let i = 0; i < 3; i++) {
      await rejection(engine.debugAbort());
      await waitFor(() => engine.status().state !== 'restarting');
    }
    expect(engine.status().state).toBe('failed');
    const err = await rejection(engine.ping());
    expect(err.code).toBe('E_ENGINE_CRASHED');
    expect(err.message).toMatch(/crashed 3 times/);
  });

  it('tries again once a restart window has passed after giving up, so serve mode never needs a restart by hand', async () => {
    // The window must hold three crashes and two host starts on a loaded 2-core machine (1.5 s did not, beside other tests).
    const engine = client({ [HOST_DEBUG_ENV]: '1' }, { maxRestarts: 2, restartWindowMs: 5000 });
    for (let i = 0; i < 3; i++) {
      await rejection(engine.debugAbort());
      await waitFor(() => engine.status().state !== 'restarting');
    }
    expect(engine.status().state).toBe('failed');
    expect((await rejection(engine.ping())).message).toMatch(/tries again/);
    await new Promise((r) => setTimeout(r, 5100));
    await expect(engine.ping()).resolves.toBeDefined();
    expect(engine.status().state).toBe('ready');
  });

  it('reports a missing addon clearly instead of hanging', async () => {
    const engine = client({ TRAINBENCH_ADDON: '/nonexistent/trainbench_native.node' });
    const err = await rejection(engine.ping());
    expect(err.code).toBe('E_INTERNAL');
    expect(err.message).toContain('/nonexistent/trainbench_native.node');
    expect(engine.status().state).toBe('failed');
  });
});

function engine_resolve(engine: EngineClient, name: string) {
  return engine.resolveDevice(name);
}

async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
