// Issue 41, "Also": an answer of E_INTERNAL (an unexpected error's own words, often a system call's) carried
// the absolute paths it failed on to any client. Serialised for the wire, its paths inside the workspace show
// relative to it and any other as its last part; other codes, whose words are ours, are left as they are.
import { promises as fs } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ApiError, toApiError, withoutAbsolutePaths } from '../../src-main/api/errors';
import { createApiRouter, type ApiHandlers } from '../../src-main/core/api-router';
import { tempDir } from '../helpers/temp-dir';

const ws = tempDir('error-paths-');
afterAll(() => ws.cleanup());

/** The router with one handler that fails as a system call does: ENOENT naming the absolute path. */
function failingRouter() {
  const handlers = new Proxy({} as ApiHandlers, {
    get: () => () => fs.readFile(path.join(ws.dir, 'runs', 'r1', 'missing.json')),
  });
  return createApiRouter(handlers);
}

describe('an E_INTERNAL answer', () => {
  it('carries no absolute path: a workspace path relative to it, any other as its last part', async () => {
    const err = (await failingRouter()
      .dispatch('runs.list', {})
      .then(() => null, (e: unknown) => e)) as ApiError;
    expect(err.code).toBe('E_INTERNAL');
    expect(err.message).toContain(ws.dir); // the server's own log keeps it

    const wire = toApiError(err).toPayload();
    expect(wire.message).not.toContain(ws.dir);
    expect(wire.message).not.toMatch(/(^|[\s'"])\//);
    expect(wire.message).toContain("'…/missing.json'");

    const relative = err.toPayload(ws.dir);
    expect(relative.message).toBe("ENOENT: no such file or directory, open 'runs/r1/missing.json'");
  });

  it('keeps words that only look like paths, and a sentence after a path', () => {
    expect(withoutAbsolutePaths('3/4 of the samples/s, and/or more')).toBe('3/4 of the samples/s, and/or more');
    expect(withoutAbsolutePaths('cannot open /home/me/secret/data.npy: gone.')).toBe('cannot open …/data.npy: gone.');
    expect(withoutAbsolutePaths('at C:\\Users\\me\\ws\\runs\\x.json.', 'C:\\Users\\me\\ws')).toBe('at runs\\x.json.');
    expect(withoutAbsolutePaths('in /srv/ws', '/srv/ws')).toBe('in .');
    // A workspace root with a space (macOS's Application Support, a Windows user name): still relative, nothing of it left.
    const mac = '/Users/me/Library/Application Support/Trainbench/workspace';
    expect(withoutAbsolutePaths(`EISDIR: rename '${mac}/runs/x/.notes.json.tmp' -> '${mac}/runs/x/notes.json'`, mac)).toBe("EISDIR: rename 'runs/x/.notes.json.tmp' -> 'runs/x/notes.json'");
    expect(withoutAbsolutePaths('open C:\\Users\\John Smith\\ws\\runs\\x\\run.json', 'C:\\Users\\John Smith\\ws')).toBe('open runs\\x\\run.json');
    // A path outside it with a space, quoted as a system call quotes it: none of it left but its last part.
    expect(withoutAbsolutePaths("ENOENT: no such file or directory, open '/home/John Smith/secret plans/data.npy'")).toBe("ENOENT: no such file or directory, open '…/data.npy'");
    expect(withoutAbsolutePaths('cannot read "C:\\Users\\John Smith\\secret\\x.csv" here')).toBe('cannot read "…/x.csv" here');
    expect(withoutAbsolutePaths("it's 3/4 done, isn't it")).toBe("it's 3/4 done, isn't it");
  });

  it('names workspace files relative to it in the words of other codes, and keeps a path outside (a person may need it)', () => {
    const e = new ApiError('E_BAD_INPUT', 'cannot read /home/me/ws/sources/a.csv: ENOENT; nor /data/b.csv');
    expect(e.toPayload('/home/me/ws').message).toBe('cannot read sources/a.csv: ENOENT; nor /data/b.csv');
    expect(e.toPayload().message).toBe(e.message);
    expect(new ApiError('E_DATA', 'C:\\ws\\sources\\x.bin is not a text CSV file').toPayload('C:\\ws').message).toBe('sources\\x.bin is not a text CSV file');
    // The root itself is ".", as the workspace's own messages name it; a sibling folder that starts alike is not it.
    expect(new ApiError('E_BAD_INPUT', 'cannot read /home/me/ws: it is a directory').toPayload('/home/me/ws').message).toBe('cannot read .: it is a directory');
    expect(new ApiError('E_BAD_INPUT', "cannot read '/home/me/ws' nor /home/me/ws2/x").toPayload('/home/me/ws/').message).toBe("cannot read '.' nor /home/me/ws2/x");
  });
});
