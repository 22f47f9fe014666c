#!/usr/bin/env node
// Builds the addon that desktop packages ship: without the debug entry points
// (ADR 0002: the deliberate-crash function is for the crash-isolation test
// only), in its own build folder so the development build in build/ keeps
// them. Then loads the result and refuses to go on if it still exports one.
//   node scripts/release-addon.mjs     (run by npm run dist:app)
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Where the release build lives (inside the ignored build/ folder) and the addon electron-builder packs from it. */
export const RELEASE_BUILD_DIR = path.join('build', 'release');
export const RELEASE_ADDON = path.join(RELEASE_BUILD_DIR, 'Release', 'trainbench_native.node');
/** The CMake options of a release build, passed through cmake-js. */
// Every supported architecture, whatever GPU (or none) the machine that builds the release has.
export const RELEASE_CMAKE_FLAGS = ['--CDTB_DEBUG_ENTRYPOINTS=OFF', '--CDTB_CUDA_ARCHITECTURES=80;86;89;90'];

/** What a built addon reports about its debug entry points: none may be present in a release. */
export function debugEntryPoints(addonPath) {
  const addon = createRequire(import.meta.url)(path.resolve(root, addonPath));
  const found = [];
  if (addon.version().debugEntryPoints !== false) found.push('version().debugEntryPoints is not false');
  if ('debugAbort' in addon) found.push('debugAbort is exported');
  return found;
}

function main() {
  const cmakeJs = path.join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  execFileSync(process.execPath, [cmakeJs, 'rebuild', '--out', RELEASE_BUILD_DIR, ...RELEASE_CMAKE_FLAGS], { cwd: root, stdio: 'inherit' });
  if (!existsSync(path.join(root, RELEASE_ADDON))) {
    console.error(`release-addon: the build finished but ${RELEASE_ADDON} is missing`);
    process.exit(1);
  }
  const found = debugEntryPoints(RELEASE_ADDON);
  if (found.length > 0) {
    console.error(`release-addon: ${RELEASE_ADDON} still has debug entry points (${found.join('; ')}); check TB_DEBUG_ENTRYPOINTS in CMakeLists.txt`);
    process.exit(1);
  }
  console.log(`release-addon: ${RELEASE_ADDON} built without debug entry points`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
