import { existsSync } from 'node:fs';
import path from 'node:path';

const ADDON_FILE = 'trainbench_native.node';

/**
 * Where the built addon may be, in the order tried: TRAINBENCH_ADDON alone when
 * set, else the packaged app's unpacked resources, then the cmake-js build folder.
 */
export function addonCandidates(packageRoot: string, env: NodeJS.ProcessEnv = process.env): string[] {
  // An explicit choice is the only candidate: silently loading another build would hide mistakes.
  if (env.TRAINBENCH_ADDON) return [path.resolve(env.TRAINBENCH_ADDON)];
  const candidates: string[] = [];
  // Inside an asar archive native modules must live in app.asar.unpacked.
  candidates.push(path.join(packageRoot.replace(/app\.asar$/, 'app.asar.unpacked'), 'build', 'Release', ADDON_FILE));
  candidates.push(path.join(packageRoot, 'build', 'Release', ADDON_FILE));
  return [...new Set(candidates)];
}

export function findAddon(packageRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const candidates = addonCandidates(packageRoot, env);
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new Error(
      `the Trainbench engine addon was not found (looked in ${candidates.join(', ')}); build it with "npm run build:native"`,
    );
  }
  return found;
}
