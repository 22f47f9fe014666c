// The folder a person agrees to run a command in, as the system enters it (seventh re-attack of issue 41): the CLI's
// consent and the app's "Run this command?" both show it through api/resolved-folder.ts.
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { resolvedFolder } from '../../src-main/api/resolved-folder';

describe('resolvedFolder', () => {
  it('resolves ".", ".." and repeated separators of a POSIX folder as path.posix.resolve does', () => {
    for (const p of ['/home/me/project/../../tmp/evil', '/a/./b//c/', '/../..', '/x/y/../../../z', '/', '/home/me/project']) {
      expect(resolvedFolder(p), p).toBe(path.posix.resolve(p));
    }
  });

  it('resolves a Windows folder as path.win32.resolve does, keeping its drive', () => {
    for (const p of ['C:\\Users\\me\\..\\..\\evil', 'D:/data/./x//y', 'C:\\..\\..', 'c:\\a\\b\\']) {
      expect(resolvedFolder(p), p).toBe(path.win32.resolve(p));
    }
  });

  it('leaves a relative folder as written: it is refused before anything runs', () => {
    expect(resolvedFolder('project/../x')).toBe('project/../x');
  });
});
