// ADR 0002: release packages ship the addon without its debug entry points.
// These check the wiring without compiling: the release flags that
// scripts/release-addon.mjs passes, as CMake configures them, leave the
// debug define out of the addon target; and the post-build check catches a
// development addon, which has them.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADDON_PATH, REPO_ROOT, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const CMAKE_JS = path.join(REPO_ROOT, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
const ws = tempDir('trainbench-release-');
afterAll(() => ws.cleanup());

interface ReleaseAddonScript {
  RELEASE_CMAKE_FLAGS: string[];
  RELEASE_ADDON: string;
  debugEntryPoints(addonPath: string): string[];
}
let script: ReleaseAddonScript;
beforeAll(async () => {
  script = (await import(path.join(REPO_ROOT, 'scripts', 'release-addon.mjs'))) as ReleaseAddonScript;
});

/** The compile definitions CMake gives the addon target when configured with `flags` (nothing is compiled). */
async function addonDefines(name: string, flags: string[]): Promise<string> {
  const out = path.join(ws.dir, name);
  // The CUDA backend does not touch this option, and detecting nvcc is slow.
  await run(process.execPath, [CMAKE_JS, 'configure', '--out', out, ...flags], { cwd: REPO_ROOT, env: { ...process.env, TB_WITH_CUDA: 'OFF' } });
  const ninja = readFileSync(path.join(out, 'build.ninja'), 'utf8');
  const block = ninja.split('\nbuild ').filter((b) => b.includes('native/src/addon/addon.cpp') && b.includes('.o:'));
  expect(block).toHaveLength(1);
  return /DEFINES = (.*)/.exec(block[0])?.[1] ?? '';
}

describe('the release addon', () => {
  it('is configured without TB_DEBUG_ENTRYPOINTS, where a development configure has it', async () => {
    expect(await addonDefines('dev', [])).toContain('-DTB_DEBUG_ENTRYPOINTS=1');
    const release = await addonDefines('release', script.RELEASE_CMAKE_FLAGS);
    expect(release).toContain('-DNAPI_VERSION=8');
    expect(release).not.toContain('TB_DEBUG_ENTRYPOINTS');
  }, 60_000);

  it('is what electron-builder packs, under the path the app loads it from', () => {
    const yml = readFileSync(path.join(REPO_ROOT, 'electron-builder.yml'), 'utf8');
    const files = yml.slice(yml.indexOf('\nfiles:'), yml.indexOf('\nasarUnpack:'));
    expect(files).toContain(`- from: ${path.dirname(script.RELEASE_ADDON)}\n    to: build/Release\n    filter: [trainbench_native.node]`);
    // The development addon (with the debug entry points) is not packed as well.
    expect(files).not.toContain('- build/Release/');
  });

  it('post-build check reports the debug entry points of a development build', () => {
    requireBuilt();
    expect(script.debugEntryPoints(ADDON_PATH)).toEqual(['version().debugEntryPoints is not false', 'debugAbort is exported']);
  });
});
