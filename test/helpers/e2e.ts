import { mkdirSync } from 'node:fs';
import path from 'node:path';

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

import { launchChromium } from './browser';
import { REPO_ROOT, requireBuilt } from './repo';
import { startServeProcess, type ServeProcess } from './serve-process';
import { tempDir } from './temp-dir';

export const SHOTS = path.join(REPO_ROOT, 'test-results', 'screenshots');

/**
 * `trainbench serve` on a fresh workspace and Debian's Chromium, for one e2e
 * file: `prepare` fills the workspace first; everything is stopped afterwards.
 */
export function serveInChromium(options: { prepare?: (workspace: string) => Promise<void> | void; env?: Record<string, string>; timeoutMs?: number; serveArgs?: string[] } = {}) {
  const workspace = tempDir();
  const fx = { workspace: workspace.dir } as { workspace: string; serve: ServeProcess; browser: Browser };
  beforeAll(async () => {
    requireBuilt();
    mkdirSync(SHOTS, { recursive: true });
    await options.prepare?.(workspace.dir);
    fx.serve = await startServeProcess(workspace.dir, options.env, options.serveArgs);
    fx.browser = await launchChromium();
  }, options.timeoutMs ?? 60_000);
  afterAll(async () => {
    await fx.browser?.close();
    await fx.serve?.stop();
    workspace.cleanup();
  });
  return fx;
}
