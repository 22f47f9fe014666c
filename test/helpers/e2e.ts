import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

import { launchChromium } from './browser';
import { CLI, REPO_ROOT, requireBuilt } from './repo';
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

/** Something in every area, made by the CLI: a training run, a benchmark, an optimisation with its report, a small imported dataset. */
export async function fillEveryArea(workspace: string): Promise<void> {
  const cli = (...args: string[]) => promisify(execFile)(process.execPath, [CLI, ...args, '--workspace', workspace]);
  await cli('train', '--model', 'mlp', '--max-steps', '20', '--json');
  await cli('benchmark-training', '--model', 'mlp', '--warmup-steps', '1', '--steps', '3', '--repeat', '2');
  await cli('optimise', '--model', 'mlp', '--steps', '3', '--warmup-steps', '1', '--max-trials', '1', '--repeat', '2', '--report');
  mkdirSync(path.join(workspace, 'sources'), { recursive: true });
  const csv = path.join(workspace, 'sources', 'iris.csv');
  writeFileSync(csv, ['sepal_length,sepal_width,species', '5.1,3.5,setosa', '7.0,3.2,versicolor', '6.3,3.3,virginica'].join('\n') + '\n');
  await cli('cache', 'build', csv, '--label', 'species', '--name', 'iris');
}
