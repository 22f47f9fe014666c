// The real app in a real browser: `trainbench serve` driven through Debian's Chromium.
import { mkdirSync } from 'node:fs';
import path from 'node:path';

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DevicesSchema, type Devices } from '../../src-main/api/devices';
import { startServer, type RunningServer } from '../../src-main/server/serve';
import { areas } from '../../src-renderer/areas';
import { launchChromium } from '../helpers/browser';
import { REPO_ROOT, requireBuilt } from '../helpers/repo';
import { startServeProcess, type ServeProcess } from '../helpers/serve-process';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

const SHOTS = path.join(REPO_ROOT, 'test-results', 'screenshots');
const workspace = tempDir();
let serve: ServeProcess;
let browser: Browser;
let expected: Devices;

beforeAll(async () => {
  requireBuilt();
  mkdirSync(SHOTS, { recursive: true });
  serve = await startServeProcess(workspace.dir);
  browser = await launchChromium();
  const { services, cleanup } = await testServices();
  expected = DevicesSchema.parse(await services.router.dispatch('engine.devices', {}));
  await cleanup();
});

afterAll(async () => {
  await browser?.close();
  await serve?.stop();
  workspace.cleanup();
});

async function openPage(url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
  });
  await page.goto(url);
  return { page, errors };
}

describe('workbench in Chromium (serve mode)', () => {
  it('shows the engine’s real device answer on the Dashboard', async () => {
    const { page, errors } = await openPage(serve.url);
    await page.getByTestId('device-cpu').waitFor();
    await expect.poll(() => page.getByTestId('device-cpu').innerText()).toContain(expected.cpu.name);
    expect(await page.getByTestId('device-cpu').innerText()).toContain(`${expected.cpu.logicalCores} logical cores`);
    const cuda = await page.getByTestId('device-cuda').innerText();
    if (expected.cuda.available) expect(cuda).toContain(expected.cuda.devices[0].name);
    else expect(cuda).toContain(expected.cuda.reason ?? '');

    await expect.poll(() => page.getByTestId('transport-state').getAttribute('data-state')).toBe('connected');
    await expect.poll(() => page.getByTestId('engine-state').getAttribute('data-state')).toBe('ready');
    // The token does not stay in the address bar.
    expect(page.url()).not.toContain('token=');
    await page.screenshot({ path: path.join(SHOTS, 'dashboard.png') });
    // The heartbeat chart (in the About panel) has real round trips in it.
    await page.getByTestId('open-about').click();
    await expect.poll(() => page.getByTestId('ping-last').innerText(), { timeout: 10_000 }).toMatch(/\d+\.\d+ ms/);
    expect(await page.locator('[data-testid="ping-chart"] canvas').count()).toBeGreaterThan(0);
    await expect
      .poll(async () => Number(await page.getByTestId('ping-chart').getAttribute('data-samples')), { timeout: 10_000 })
      .toBeGreaterThanOrEqual(4);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('navigates every area', async () => {
    const { page, errors } = await openPage(serve.url);
    for (const area of areas) {
      await page.getByTestId(`nav-${area.name}`).click();
      await expect.poll(() => page.locator('h1').innerText()).toBe(area.title);
      expect(page.url()).toContain(`#${area.path}`);
      if (area.name !== 'dashboard') await page.getByTestId(`area-${area.name}`).waitFor();
      await page.screenshot({ path: path.join(SHOTS, `area-${area.name}.png`) });
    }
    // A reload keeps working without the token in the URL (it is kept for the session).
    await page.reload();
    await expect.poll(() => page.getByTestId('transport-state').getAttribute('data-state')).toBe('connected');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('without the token the page cannot reach the API and says so', async () => {
    const origin = new URL(serve.url).origin;
    const { page } = await openPage(`${origin}/`);
    await expect.poll(() => page.getByTestId('transport-state').getAttribute('data-state')).toBe('reconnecting');
    expect(await page.getByTestId('device-list').count()).toBe(0);
    await page.close();
  });
});

describe('reconnection', () => {
  let server: RunningServer | null = null;
  let cleanup: (() => Promise<void>) | null = null;
  afterAll(async () => {
    await server?.close();
    await cleanup?.();
  });

  it('shows reconnecting when the server goes away and recovers when it is back', async () => {
    const t = await testServices();
    cleanup = t.cleanup;
    const rendererDir = path.join(REPO_ROOT, 'dist', 'renderer');
    server = await startServer({ services: t.services, rendererDir, port: 0, token: 'fixed-test-token' });
    const port = server.port;
    const { page } = await openPage(server.url);
    await expect.poll(() => page.getByTestId('transport-state').getAttribute('data-state')).toBe('connected');

    await server.close();
    server = null;
    await expect.poll(() => page.getByTestId('transport-state').getAttribute('data-state')).toBe('reconnecting');
    await page.screenshot({ path: path.join(SHOTS, 'reconnecting.png') });

    server = await startServer({ services: t.services, rendererDir, port, token: 'fixed-test-token' });
    await expect.poll(() => page.getByTestId('transport-state').getAttribute('data-state'), { timeout: 15_000 }).toBe('connected');
    await page.getByTestId('refresh-devices').click();
    await expect.poll(() => page.getByTestId('device-cpu').innerText()).toContain(expected.cpu.name);
    await page.close();
  });
});
