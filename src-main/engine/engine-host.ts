/**
 * Entry point of the engine-host child process: the only process that loads
 * the native addon. A native crash ends this process, never the app.
 */
import { findAddon } from './addon-path';
import { toApiErrorPayload } from './engine-error';
import type { HostRequest, HostToSupervisor } from './host-protocol';
import { HOST_DEBUG_ENV } from './host-protocol';
import type { NativeAddon } from './native-addon';
import { packageRoot } from './package-root';

interface ParentPort {
  on(event: 'message', listener: (message: { data: unknown }) => void): void;
  postMessage(message: unknown): void;
}

/** Electron's utilityProcess gives `process.parentPort`; child_process.fork gives `process.send`. */
function channel(): { send(msg: HostToSupervisor): void; onMessage(cb: (msg: unknown) => void): void } {
  const parentPort = (process as unknown as { parentPort?: ParentPort }).parentPort;
  if (parentPort) {
    return {
      send: (msg) => parentPort.postMessage(msg),
      onMessage: (cb) => parentPort.on('message', (e) => cb(e.data)),
    };
  }
  if (!process.send) throw new Error('engine-host must be started by the engine supervisor');
  return {
    send: (msg) => process.send?.(msg),
    onMessage: (cb) => process.on('message', cb),
  };
}

const startedAt = Date.now();
const debugEnabled = process.env[HOST_DEBUG_ENV] === '1';

function handle(addon: NativeAddon, req: HostRequest): unknown {
  switch (req.method) {
    case 'version':
      return { ...addon.version(), hostPid: process.pid };
    case 'devices':
      return addon.devices();
    case 'resolveDevice':
      return addon.resolveDevice(String((req.params as { name?: unknown } | null)?.name ?? ''));
    case 'ping':
      return { hostPid: process.pid, hostUptimeMs: Date.now() - startedAt };
    case 'debug.abort':
      if (!debugEnabled || !addon.debugAbort) {
        throw Object.assign(new Error('debug.abort is only available in engine hosts started in debug mode'), {
          code: 'E_BAD_INPUT',
        });
      }
      return addon.debugAbort();
  }
}

function main(): void {
  const port = channel();
  let addon: NativeAddon;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a .node file can only be loaded by require
    addon = require(findAddon(packageRoot())) as NativeAddon;
  } catch (err) {
    port.send({ kind: 'ready', pid: process.pid, error: (err as Error).message });
    return;
  }
  port.onMessage((raw) => {
    const req = raw as HostRequest;
    if (!req || req.kind !== 'request') return;
    try {
      port.send({ kind: 'reply', id: req.id, ok: true, result: handle(addon, req) });
    } catch (err) {
      port.send({ kind: 'reply', id: req.id, ok: false, error: toApiErrorPayload(err) });
    }
  });
  port.send({ kind: 'ready', pid: process.pid });
}

main();
