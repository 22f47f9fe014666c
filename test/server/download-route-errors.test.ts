// Attack round 8, finding 4: a download refused by an unexpected error (a system call's, naming the absolute path it
// failed on) showed its raw words: the workspace's absolute folder went to whoever asked. The route now cleans them as
// the API does: a workspace file relative to it, any other path as its last part.
import type { IncomingMessage, ServerResponse } from 'node:http';

import { describe, expect, it } from 'vitest';

import type { DownloadService } from '../../src-main/core/downloads/download-service';
import { downloadHandler } from '../../src-main/server/download-route';

const ROOT = '/home/someone/secret-place/workspace';

/** The handler over a download service whose planning fails as a scandir of an unreadable folder does. */
async function refusedWith(error: Error): Promise<{ status: number; body: string }> {
  const downloads = {
    root: ROOT,
    plan: () => Promise.reject(error),
    redeem: () => null,
  } as unknown as DownloadService;
  const handle = downloadHandler({ downloads, token: 't0ken', allowedHosts: new Set(['127.0.0.1']), log: () => undefined });
  const req = { method: 'GET', url: '/download/run/r1', headers: { host: '127.0.0.1:8000', 'x-trainbench-token': 't0ken' } } as unknown as IncomingMessage;
  let status = 0;
  let body = '';
  const res = {
    setHeader: () => undefined,
    writeHead(code: number) {
      status = code;
      return this;
    },
    end(text: string) {
      body = text;
    },
  } as unknown as ServerResponse;
  await handle(req, res);
  return { status, body };
}

describe('a download refused by an unexpected error', () => {
  it('names the workspace file relative to it and no other absolute path', async () => {
    const inside = await refusedWith(Object.assign(new Error(`EACCES: permission denied, scandir '${ROOT}/runs/r1/sub'`), { code: 'EACCES' }));
    expect(inside).toEqual({ status: 422, body: "run r1 cannot be downloaded: EACCES: permission denied, scandir 'runs/r1/sub'\n" });
    // A system call's own error (code, syscall and path, as Node makes them) is said in words, as every answer's is.
    const real = Object.assign(new Error(`EACCES: permission denied, scandir '${ROOT}/runs/r1/sub'`), { code: 'EACCES', errno: -13, syscall: 'scandir', path: `${ROOT}/runs/r1/sub` });
    expect(await refusedWith(real)).toEqual({ status: 422, body: 'run r1 cannot be downloaded: runs/r1/sub: permission denied\n' });
    const outside = await refusedWith(new Error("ELOOP: too many links, open '/mnt/other disk/private/x'"));
    expect(outside.body).toBe("run r1 cannot be downloaded: ELOOP: too many links, open '…/x'\n");
  });
});
