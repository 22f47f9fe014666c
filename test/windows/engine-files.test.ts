// The engine's Windows file code (native/src/data/files.cpp, core/file_path.cpp),
// built with MinGW-w64 and run under Wine: share modes, UTF-8 paths and
// replacing files behave differently there, and Linux builds never run it.
// Skips with the reason when MinGW or Wine is missing; TB_REQUIRE_WINE=1 (CI)
// makes that a failure, so the check cannot pass empty.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const MINGW = 'x86_64-w64-mingw32-g++-posix';
const SOURCES = ['test/windows/engine_files_win.cpp', 'native/src/core/file_path.cpp', 'native/src/core/errors.cpp', 'native/src/data/files.cpp'];

function onPath(cmd: string): string | null {
  const dirs = (process.env.PATH ?? '').split(path.delimiter);
  return dirs.map((d) => path.join(d, cmd)).find((p) => existsSync(p)) ?? null;
}

// Debian's wine64 package puts its loader outside PATH.
const wine = onPath('wine64') ?? onPath('wine') ?? (existsSync('/usr/lib/wine/wine64') ? '/usr/lib/wine/wine64' : null);
const mingw = onPath(MINGW);
const missing = [!mingw && `${MINGW} (apt-get install g++-mingw-w64-x86-64-posix)`, !wine && 'Wine (apt-get install wine64)'].filter(Boolean);
const reason = `Windows file tests skipped: no ${missing.join(' and no ')}`;
if (missing.length && process.env.TB_REQUIRE_WINE === '1') throw new Error(`${reason}, and TB_REQUIRE_WINE=1 requires them`);
if (missing.length) console.log(reason);

/** Wine sees the Linux root as drive Z:. */
const windowsPath = (linux: string) => `Z:${linux.replaceAll('/', '\\')}`;

const scratch = tempDir('win-files-');
afterAll(() => scratch.cleanup());

describe.skipIf(missing.length > 0)('engine file access on Windows (MinGW build under Wine)', () => {
  it('reads files open for writing, opens UTF-8 and long paths, replaces files, and says why an open failed', () => {
    const exe = path.join(scratch.dir, 'engine_files_win.exe');
    execFileSync(mingw!, ['-std=c++17', '-O0', '-static', '-Inative/src', ...SOURCES, '-o', exe], { cwd: REPO_ROOT, stdio: 'pipe' });
    const work = path.join(scratch.dir, 'work');
    mkdirSync(work);
    // One prefix reused across runs: creating it takes Wine ~20 s, starting it ~2 s.
    const prefix = path.join(os.tmpdir(), 'trainbench-wine-prefix');
    const run = spawnSync(wine!, [exe, windowsPath(work)], {
      env: { ...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    const lines = run.stdout.split(/\r?\n/).filter(Boolean); // Windows text mode writes CRLF
    expect(lines.filter((l) => !l.startsWith('ok ')), run.stderr).toEqual([]);
    expect(lines).toEqual([
      'ok maps and reads a file another handle has open for writing',
      'ok opens UTF-8 paths with non-ASCII folder names',
      'ok replace_file replaces an existing file in one step',
      'ok opens a path longer than MAX_PATH, with / and .. in it',
      'ok says why a file does not open, in the system\'s words',
      'ok rejects a path that is not UTF-8 with E_BAD_INPUT',
    ]);
    expect(run.status).toBe(0);
  }, 180_000);
});
