import { existsSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const ADDON_PATH = path.join(REPO_ROOT, 'build', 'Release', 'trainbench_native.node');
export const HOST_ENTRY = path.join(REPO_ROOT, 'dist', 'src-main', 'engine', 'engine-host.js');
export const CLI = path.join(REPO_ROOT, 'bin', 'trainbench.js');

/** Native and process tests need `npm run build` first; fail loudly instead of skipping. */
export function requireBuilt(): void {
  for (const file of [ADDON_PATH, HOST_ENTRY]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run "npm run build" before these tests`);
  }
}
