// The Electron shell cannot run here (no Electron binary), so its testable
// parts are pure: window options, the preload's bridge, navigation policy, menu.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import type { CallOutcome } from '../../src-main/api/bridge';
import type { BridgeIpc } from '../../src-main/electron/preload-api';
import { buildBridge } from '../../src-main/electron/preload-api';
import { menuTemplate } from '../../src-main/electron/menu';
import { CONTENT_SECURITY_POLICY } from '../../src-main/api/csp';
import { appResponseHeaders, isAppUrl, isExternalLink } from '../../src-main/electron/navigation';
import { mainWindowOptions } from '../../src-main/electron/window-options';
import { REPO_ROOT } from '../helpers/repo';

describe('main window options', () => {
  it('keep the security defaults on', () => {
    const opts = mainWindowOptions('/app/preload.js');
    expect(opts.show).toBe(false);
    expect(opts.webPreferences).toMatchObject({
      preload: '/app/preload.js',
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
    });
  });
});

function fakeIpc() {
  const listeners = new Set<(event: unknown, name: string, data: unknown) => void>();
  const ipc: BridgeIpc & { emit(name: string, data: unknown): void } = {
    invoke: vi.fn(async (): Promise<CallOutcome> => ({ ok: true, result: 42 })),
    on: (_channel, l) => void listeners.add(l),
    removeListener: (_channel, l) => void listeners.delete(l),
    emit: (name, data) => listeners.forEach((l) => l({ sender: 'secret' }, name, data)),
  };
  return ipc;
}

describe('preload bridge', () => {
  it('exposes exactly the named functions of the contract, frozen', () => {
    const bridge = buildBridge(fakeIpc(), 'call', 'event');
    expect(Object.keys(bridge).sort()).toEqual(['call', 'onEvent', 'transport']);
    expect(typeof bridge.call).toBe('function');
    expect(typeof bridge.onEvent).toBe('function');
    expect(bridge.transport).toBe('electron-ipc');
    expect(Object.isFrozen(bridge)).toBe(true);
  });

  it('forwards calls on the call channel', async () => {
    const ipc = fakeIpc();
    const bridge = buildBridge(ipc, 'tb:call', 'tb:event');
    await expect(bridge.call('engine.devices', {})).resolves.toEqual({ ok: true, result: 42 });
    expect(ipc.invoke).toHaveBeenCalledWith('tb:call', 'engine.devices', {});
  });

  it('delivers events without the IPC event object, and unsubscribes', () => {
    const ipc = fakeIpc();
    const bridge = buildBridge(ipc, 'c', 'e');
    const seen: unknown[][] = [];
    const off = bridge.onEvent((...args) => seen.push(args));
    ipc.emit('engine.status', { state: 'ready' });
    off();
    ipc.emit('engine.status', { state: 'failed' });
    expect(seen).toEqual([['engine.status', { state: 'ready' }]]);
  });
});

describe('navigation policy', () => {
  const app = 'file:///opt/trainbench/dist/renderer/index.html';
  it('allows only the bundled renderer (any route)', () => {
    expect(isAppUrl('file:///opt/trainbench/dist/renderer/index.html#/runs', app)).toBe(true);
    expect(isAppUrl('file:///etc/passwd', app)).toBe(false);
    expect(isAppUrl('https://example.com/', app)).toBe(false);
    expect(isAppUrl('not a url', app)).toBe(false);
  });
  it('sends only http(s) links to the system browser', () => {
    expect(isExternalLink('https://pytorch.org')).toBe(true);
    expect(isExternalLink('file:///etc/passwd')).toBe(false);
    expect(isExternalLink('javascript:alert(1)')).toBe(false);
  });
});

describe('the Content Security Policy', () => {
  const dir = '/opt/trainbench/dist/renderer';
  it('comes as a response header on the app\'s own files, and on nothing else', () => {
    const given = { 'Content-Type': ['text/html'] };
    for (const url of [`file://${dir}/index.html`, `file://${dir}/assets/index-abc.js`]) {
      expect(appResponseHeaders(url, given, dir)).toEqual({ ...given, 'Content-Security-Policy': [CONTENT_SECURITY_POLICY], 'X-Content-Type-Options': ['nosniff'] });
    }
    for (const url of ['file:///etc/passwd', `file://${dir}-other/index.html`, 'https://example.com/', 'devtools://devtools/bundled/x.html', 'not a url']) {
      expect(appResponseHeaders(url, given, dir)).toBe(given);
    }
  });

  it('is the one serve mode sends and index.html carries (less frame-ancestors, which a meta tag cannot set)', () => {
    const html = readFileSync(path.join(REPO_ROOT, 'src-renderer', 'index.html'), 'utf8');
    const meta = /http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(html)?.[1];
    expect(meta).toBe(CONTENT_SECURITY_POLICY.replace("; frame-ancestors 'none'", ''));
  });
});

describe('menu', () => {
  const actions = { openWorkspaceFolder: vi.fn(), openDocs: vi.fn() };
  const roles = (isDev: boolean) =>
    JSON.stringify(menuTemplate(actions, false, isDev), (k, v) => (typeof v === 'function' ? undefined : v));
  it('offers developer tools only in development', () => {
    expect(roles(true)).toContain('toggleDevTools');
    expect(roles(false)).not.toContain('toggleDevTools');
  });
});
