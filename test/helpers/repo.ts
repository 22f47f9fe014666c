import { existsSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
// TRAINBENCH_ADDON picks another build, as it does for the app: the emulated device's (npm run test:gpu-emu).
export const ADDON_PATH = process.env.TRAINBENCH_ADDON ? path.resolve(process.env.TRAINBENCH_ADDON) : path.join(REPO_ROOT, 'build', 'Release', 'trainbench_native.node');
export const HOST_ENTRY = path.join(REPO_ROOT, 'dist', 'src-main', 'engine', 'engine-host.js');
export const CLI = path.join(REPO_ROOT, 'bin', 'trainbench.js');

/** Native and process tests need `npm run build` first; fail loudly instead of skipping. */
export function requireBuilt(): void {
  for (const file of [ADDON_PATH, HOST_ENTRY]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run "npm run build" before these tests`);
  }
}
