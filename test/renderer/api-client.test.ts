import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import type { CallOutcome } from '../../src-main/api/bridge';
import { printableDeep } from '../../src-main/api/shell-word';
import { ApiClient } from '../../src-renderer/transport/api-client';
import { setApiClient } from '../../src-renderer/transport/client-instance';
import type { Transport, TransportState } from '../../src-renderer/transport/transport';
import { listenerSet } from '../../src-renderer/transport/transport';
import { serveSocketUrl, takeServeToken } from '../../src-renderer/transport/ws-transport';
import { useConnectionStore } from '../../src-renderer/stores/connection';
import { useDevicesStore } from '../../src-renderer/stores/devices';

const devices = {
  cpu: { name: 'Test CPU', arch: 'x86_64', logicalCores: 8, simd: ['avx2', 'fma'] },
  cuda: { compiled: true, available: false, reason: 'no NVIDIA driver found', driverVersion: 0, runtimeVersion: 13000, devices: [] },
};
const version = { version: '0.1.0', napiVersion: 8, cudaCompiled: true, debugEntryPoints: false, hostPid: 42 };

/** A transport whose answers the test decides. */
function fakeTransport(answer: (method: string, params: unknown) => CallOutcome) {
  const events = listenerSet<[string, unknown]>();
  const states = listenerSet<[TransportState]>();
  let state: TransportState = 'connected';
  const transport: Transport & { emit(e: string, d: unknown): void; setState(s: TransportState): void } = {
    kind: 'websocket',
    state: () => state,
    onState: states.add,
    call: async (method, params) => answer(method, params),
    onEvent: events.add,
    close: () => undefined,
    emit: (e, d) => events.emit(e, d),
    setState: (s) => {
      state = s;
      states.emit(s);
    },
  };
  return transport;
}

const answers = (method: string): CallOutcome => {
  if (method === 'engine.devices') return { ok: true, result: devices };
  if (method === 'engine.version') return { ok: true, result: version };
  if (method === 'engine.status') return { ok: true, result: { state: 'ready', pid: 42, restarts: 0, lastFailure: null } };
  return { ok: false, error: { code: 'E_UNKNOWN_METHOD', message: method } };
};

describe('ApiClient', () => {
  it('returns validated results', async () => {
    const client = new ApiClient(fakeTransport(answers));
    await expect(client.call('engine.devices', {})).resolves.toEqual(devices);
  });

  it('throws an ApiError carrying the code of a failed call', async () => {
    const client = new ApiClient(fakeTransport(() => ({ ok: false, error: { code: 'E_CUDA', message: 'driver lost' } })));
    await expect(client.call('engine.devices', {})).rejects.toMatchObject({ code: 'E_CUDA', message: 'driver lost' });
  });

  it('rejects an answer that breaks the contract, naming the field', async () => {
    const client = new ApiClient(fakeTransport(() => ({ ok: true, result: { cpu: { name: 3 } } })));
    await expect(client.call('engine.devices', {})).rejects.toMatchObject({
      code: 'E_INTERNAL',
      message: expect.stringContaining('result.cpu.name'),
    });
  });

  it('delivers only valid events of the asked stream', () => {
    const transport = fakeTransport(answers);
    const client = new ApiClient(transport);
    const seen: unknown[] = [];
    client.on('engine.status', (s) => seen.push(s.state));
    transport.emit('engine.status', { state: 'restarting', pid: null, restarts: 1, lastFailure: 'SIGABRT' });
    transport.emit('engine.status', { state: 'exploded' });
    transport.emit('other', {});
    expect(seen).toEqual(['restarting']);
  });
});

describe('ApiClient: text from workspace files arrives escaped (re-attack 10)', () => {
  // Erase, carriage return, OSC title, a bidi override, a character drawn as nothing, a line separator.
  const PLANT = '\x1b[2K\r\x1b]0;t\x07\u202e\u17b4\u2028';
  const ESCAPED = '\\x1b[2K\\r\\x1b]0;t\\x07\\u202e\\u17b4\\u2028';

  it('in every string and record key of an answer and an event, a multi-line message keeping its newlines', async () => {
    const transport = fakeTransport((method) =>
      method === 'engine.status' ? { ok: true, result: { state: 'ready', pid: 42, restarts: 0, lastFailure: `one\ntwo${PLANT}` } } : answers(method),
    );
    const client = new ApiClient(transport);
    expect((await client.call('engine.status', {})).lastFailure).toBe(`one\ntwo${ESCAPED}`);
    // A tab lays a line out (a script's "epoch 1\tloss 0.3"): kept, as a newline is.
    expect(printableDeep({ line: 'epoch 1\tloss 0.3\x1b[0m' })).toEqual({ line: 'epoch 1\tloss 0.3\\x1b[0m' });
    const seen: unknown[] = [];
    client.on('engine.status', (s) => seen.push(s.lastFailure));
    transport.emit('engine.status', { state: 'restarting', pid: null, restarts: 1, lastFailure: `gpu${PLANT}` });
    expect(seen).toEqual([`gpu${ESCAPED}`]);
  });

  it('but the file chooser\'s names as they are: they are sent back to name the file, and the chooser escapes what it shows', async () => {
    const entry = { name: `a${PLANT}.csv`, path: `sources/a${PLANT}.csv`, kind: 'file', bytes: 3 };
    const client = new ApiClient(fakeTransport(() => ({ ok: true, result: { dir: 'sources', entries: [entry], omitted: 0, omittedAtLeast: false } })));
    const listed = await client.call('files.list', { dir: 'sources' });
    expect(listed.entries[0].path).toBe(entry.path);
  });
});

describe('renderer stores', () => {
  beforeEach(() => setActivePinia(createPinia()));

  it('devices store loads the engine answer', async () => {
    setApiClient(new ApiClient(fakeTransport(answers)));
    const store = useDevicesStore();
    await store.refresh();
    expect(store.devices).toEqual(devices);
    expect(store.version?.hostPid).toBe(42);
    expect(store.error).toBeNull();
    expect(store.loading).toBe(false);
  });

  it('devices store shows a failure with its code', async () => {
    setApiClient(new ApiClient(fakeTransport(() => ({ ok: false, error: { code: 'E_DISCONNECTED', message: 'lost' } }))));
    const store = useDevicesStore();
    await store.refresh();
    expect(store.devices).toBeNull();
    expect(store.error).toBe('disconnected: lost');
  });

  it('connection store follows transport state and engine events', async () => {
    const transport = fakeTransport(answers);
    setApiClient(new ApiClient(transport));
    const store = useConnectionStore();
    store.start();
    await Promise.resolve();
    expect(store.transportState).toBe('connected');
    transport.setState('reconnecting');
    expect(store.transportState).toBe('reconnecting');
    transport.emit('engine.status', { state: 'restarting', pid: null, restarts: 2, lastFailure: 'killed by signal SIGABRT' });
    expect(store.engine).toMatchObject({ state: 'restarting', restarts: 2 });
    store.dispose();
  });
});

describe('serve token handling', () => {
  it('takes the token out of the address bar and keeps it for reloads', () => {
    const stored = new Map<string, string>();
    const storage = { getItem: (k: string) => stored.get(k) ?? null, setItem: (k: string, v: string) => void stored.set(k, v) } as unknown as Storage;
    let replaced = '';
    const history = { state: null, replaceState: (_s: unknown, _t: string, url: string) => (replaced = url) } as unknown as History;
    const location = { search: '?token=abc&x=1', pathname: '/', hash: '#/runs', protocol: 'http:', host: '127.0.0.1:7433' } as Location;
    expect(takeServeToken(location, history, storage)).toBe('abc');
    expect(replaced).toBe('/?x=1#/runs');
    const reloaded = { ...location, search: '' } as Location;
    expect(takeServeToken(reloaded, history, storage)).toBe('abc');
    expect(serveSocketUrl(location, 'a b')).toBe('ws://127.0.0.1:7433/api?token=a%20b');
  });
});
