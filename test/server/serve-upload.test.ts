// Serve mode's upload of data files into sources/ (issue 41 item 1), over real sockets: a file streamed
// in and visible only when whole; over the limit refused (by Content-Length at once, by the bytes as
// they come) without the server's memory growing; bad names, a taken name, no or a wrong token, another
// origin or site, a form's POST, a sender that goes or stalls, and a sources/ that is a link: each
// refused with a message naming the value, no partial file left, and the server goes on serving.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServices, type Services } from '../../src-main/core/services';
import { MAX_SOURCE_FILES } from '../../src-main/core/workspace/source-files';
import { startServer, type RunningServer } from '../../src-main/server/serve';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const MiB = 1024 * 1024;
const LIMIT = 96 * MiB;
const STALL_MS = 3000;
const TOKEN = 'u'.repeat(32);

const workspace = tempDir();
const renderer = tempDir();
const outside = tempDir();
let services: Services;
let server: RunningServer;
const logs: string[] = [];
const sources = path.join(workspace.dir, 'sources');

beforeAll(async () => {
  requireBuilt();
  services = await createServices({ workspaceDir: workspace.dir, engine: { entry: HOST_ENTRY } });
  server = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: (l) => logs.push(l), uploadMaxBytes: LIMIT, uploadStallMs: STALL_MS });
  // The first large transfer grows the process's pools once (about 40 MiB, the same for any size):
  // taken before the memory is measured, so what a test measures is what its upload costs.
  await sendFromAnotherProcess('warm-up.bin', 32 * MiB, true);
  rmSync(path.join(sources, 'warm-up.bin'));
}, 60_000);

afterAll(async () => {
  await server?.close();
  await services?.dispose();
  workspace.cleanup();
  renderer.cleanup();
  outside.cleanup();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const own = () => ({ host: `127.0.0.1:${server.port}`, origin: `http://127.0.0.1:${server.port}`, 'sec-fetch-site': 'same-origin', 'x-trainbench-token': TOKEN });

/** One request with exactly these headers and this body. */
function send(method: string, target: string, headers: Record<string, string>, body: Buffer | string = '', port = server.port): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers }, timeout: 20_000 }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${target} took more than 20 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** What sources/ holds, temp files included. */
const listed = (dir = sources) => readdirSync(dir).sort();

/** The file list the import wizard shows, from the services' own router. */
async function wizardFiles(): Promise<string[]> {
  const r = (await services.router.dispatch('files.list', { dir: 'sources' })) as { entries: { name: string }[] };
  return r.entries.map((e) => e.name);
}

/**
 * A sender in its own process (so its buffers are not counted as the server's): `total` bytes of one reused
 * chunk, with or without Content-Length; it prints the answer and how much it had written by then.
 */
const SENDER = `
const http = require('http');
const [port, token, name, total, declare] = process.argv.slice(1);
const chunk = Buffer.alloc(1 << 20, 97);
const headers = { host: '127.0.0.1:' + port, 'x-trainbench-token': token };
if (declare === 'yes') headers['content-length'] = total;
const req = http.request({ host: '127.0.0.1', port: Number(port), method: 'PUT', path: '/upload/sources/' + name, headers });
let sent = 0, done = false;
const finish = (o) => { if (done) return; done = true; console.log(JSON.stringify({ sent, ...o })); process.exit(0); };
req.on('response', (res) => { let body = ''; res.on('data', (c) => (body += c)); res.on('end', () => finish({ status: res.statusCode, body })); });
req.on('error', (e) => setTimeout(() => finish({ error: e.code || e.message }), 500));
function pump() { while (sent < Number(total)) { const ok = req.write(chunk); sent += chunk.length; if (!ok) return void req.once('drain', pump); } req.end(); }
pump();
`;

/** Runs the sender while sampling this process's resident memory; the peak growth over the start. */
async function sendFromAnotherProcess(name: string, total: number, declare: boolean, port = server.port): Promise<{ answer: { sent: number; status?: number; body?: string; error?: string }; growth: number }> {
  const start = process.memoryUsage.rss();
  let peak = start;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', SENDER, String(port), TOKEN, name, String(total), declare ? 'yes' : 'no'], { timeout: 60_000 });
    return { answer: JSON.parse(stdout) as never, growth: peak - start };
  } finally {
    clearInterval(sampler);
  }
}

/** Starts a PUT and hands back the request, to write to and break off by hand. */
function openUpload(name: string, contentLength: number): { req: http.ClientRequest; answer: Promise<Answer | Error> } {
  const req = http.request({ host: '127.0.0.1', port: server.port, path: `/upload/sources/${encodeURIComponent(name)}`, method: 'PUT', headers: { ...own(), 'content-length': String(contentLength) } });
  const answer = new Promise<Answer | Error>((resolve) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', (err) => resolve(err));
  });
  return { req, answer };
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The server still takes an upload, and the file arrives whole. */
async function expectServing(name: string): Promise<void> {
  const body = `a,b,label\n1,2,x\n`;
  const ok = await send('PUT', `/upload/sources/${name}`, own(), body);
  expect(ok.status, ok.text).toBe(201);
  expect(readFileSync(path.join(sources, name), 'utf8')).toBe(body);
}

describe('uploads that trickle (re-attack 14)', () => {
  it('are dropped once slower than the least an upload must send, so they hold no slot another window waits for', async () => {
    const lines: string[] = [];
    const slow = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: (l) => lines.push(l), uploadMinRate: { bytes: 4096, windowMs: 1000 } });
    const headers = { ...own(), host: `127.0.0.1:${slow.port}`, origin: `http://127.0.0.1:${slow.port}` };
    const tricklers = Array.from({ length: 4 }, (_, i) => {
      const req = http.request({ host: '127.0.0.1', port: slow.port, path: `/upload/sources/trickle-${i}.csv`, method: 'PUT', headers: { ...headers, 'content-length': String(MiB) } });
      req.on('error', () => undefined);
      req.write('a');
      // A byte every 200 ms: under the 60 s stall timer for ever, far under 4096 bytes a second.
      const timer = setInterval(() => req.write('a'), 200);
      return { req, timer };
    });
    try {
      await expect.poll(() => lines.filter((l) => /upload "trickle-\d\.csv" stopped: the sender sent \d+ bytes in 1 s, less than the 4096 an upload must to keep its slot/.test(l)).length, { timeout: 10_000 }).toBe(4);
      // Their slots are free: another window's upload is taken, not answered 503.
      const ok = await send('PUT', '/upload/sources/after-trickle.csv', headers, 'a,b\n1,2\n', slow.port);
      expect(ok.status, ok.text).toBe(201);
      expect(listed().filter((n) => /^\.?trickle-/.test(n))).toEqual([]);
    } finally {
      for (const t of tricklers) {
        clearInterval(t.timer);
        t.req.destroy();
      }
      await slow.close();
      rmSync(path.join(sources, 'after-trickle.csv'), { force: true });
    }
  }, 30_000);
});

describe('uploads that keep just above the floor (re-attack 15)', () => {
  it('give their slot to a new upload when all are taken, the slowest first', async () => {
    const lines: string[] = [];
    const server2 = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: (l) => lines.push(l), uploadMinRate: { bytes: 1024, windowMs: 500 }, uploadFairBytesPerSecond: 64 * 1024 });
    const headers = { ...own(), host: `127.0.0.1:${server2.port}`, origin: `http://127.0.0.1:${server2.port}` };
    // 1 KiB every 100 ms: over the floor (1 KiB a half second), under the 64 KiB a second a slot is kept at.
    const slow = Array.from({ length: 4 }, (_, i) => {
      const req = http.request({ host: '127.0.0.1', port: server2.port, path: `/upload/sources/steady-${i}.csv`, method: 'PUT', headers: { ...headers, 'content-length': String(MiB) } });
      req.on('error', () => undefined);
      const timer = setInterval(() => req.write(Buffer.alloc(1024, 97)), 100);
      return { req, timer };
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 800));
      const ok = await send('PUT', '/upload/sources/after-steady.csv', headers, 'a,b\n1,2\n', server2.port);
      expect(ok.status, ok.text).toBe(201);
      await expect.poll(() => lines.filter((l) => /upload "steady-\d\.csv" stopped: it gave its slot to another upload: \d+ bytes a second, under the 65536/.test(l)).length).toBe(1);
    } finally {
      for (const t of slow) {
        clearInterval(t.timer);
        t.req.destroy();
      }
      await server2.close();
      rmSync(path.join(sources, 'after-steady.csv'), { force: true });
    }
  }, 30_000);
});

describe('uploads started in rotation (re-attack 16)', () => {
  it('are judged by their rate after a short grace, not only once a rate window old: a new window\'s upload is taken', async () => {
    const lines: string[] = [];
    // A long rate window (the floor's, 5 s): young uploads were exempt for all of it.
    const server3 = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: (l) => lines.push(l), uploadMinRate: { bytes: 1024, windowMs: 5_000 }, uploadFairBytesPerSecond: 64 * 1024 });
    const headers = { ...own(), host: `127.0.0.1:${server3.port}`, origin: `http://127.0.0.1:${server3.port}` };
    // Each: 2 KiB at once (over the floor), then 100 bytes every 200 ms.
    const young = Array.from({ length: 4 }, (_, i) => {
      const req = http.request({ host: '127.0.0.1', port: server3.port, path: `/upload/sources/young-${i}.csv`, method: 'PUT', headers: { ...headers, 'content-length': String(MiB) } });
      req.on('error', () => undefined);
      req.write(Buffer.alloc(2048, 97));
      const timer = setInterval(() => req.write(Buffer.alloc(100, 97)), 200);
      return { req, timer };
    });
    try {
      // Past the 2 s grace, well within the 5 s window.
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      // A name that is refused takes nobody's slot (re-attack 17).
      const bad = await send('PUT', '/upload/sources/.hidden.csv', headers, 'a,b\n1,2\n', server3.port);
      expect(bad.status, bad.text).toBe(400);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(lines.filter((l) => l.includes('gave its slot'))).toEqual([]);
      const ok = await send('PUT', '/upload/sources/after-young.csv', headers, 'a,b\n1,2\n', server3.port);
      expect(ok.status, ok.text).toBe(201);
      await expect.poll(() => lines.filter((l) => /upload "young-\d\.csv" stopped: it gave its slot to another upload: \d+ bytes a second, under the 65536/.test(l)).length).toBe(1);
    } finally {
      for (const t of young) {
        clearInterval(t.timer);
        t.req.destroy();
      }
      await server3.close();
      rmSync(path.join(sources, 'after-young.csv'), { force: true });
    }
  }, 30_000);
});

describe('uploads under a byte meter, the disk\'s free space and a count of files (re-attack 27, U1)', () => {
  it('reads all uploads together at most the meter\'s bytes a second, both in turn', async () => {
    const metered = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: () => undefined, uploadBytesPerSecond: 8 * MiB });
    const headers = { ...own(), host: `127.0.0.1:${metered.port}`, origin: `http://127.0.0.1:${metered.port}` };
    const data = Buffer.alloc(12 * MiB, 98);
    try {
      const started = performance.now();
      const took = await Promise.all(
        ['metered-a.bin', 'metered-b.bin'].map(async (name) => {
          const ok = await send('PUT', `/upload/sources/${name}`, headers, data, metered.port);
          expect(ok.status, ok.text).toBe(201);
          return performance.now() - started;
        }),
      );
      // 24 MiB at 8 MiB a second after a 4 MiB burst: 2.5 s for both. Unmetered, loopback took a fraction of a
      // second; read one after the other, the first would have been done in 1 s.
      expect(Math.min(...took)).toBeGreaterThan(1_700);
      for (const name of ['metered-a.bin', 'metered-b.bin']) expect(sha(readFileSync(path.join(sources, name)))).toBe(sha(data));
    } finally {
      await metered.close();
      for (const name of ['metered-a.bin', 'metered-b.bin']) rmSync(path.join(sources, name), { force: true });
    }
  }, 30_000);

  it('refuses a file the disk has no room for, by its size at once and by its bytes as they come, naming both', async () => {
    const st = statfsSync(workspace.dir);
    // What is free now, less 8 MiB: a file of more leaves less than the server keeps free.
    const keepFree = st.bavail * st.bsize - 8 * MiB;
    const roomy = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: () => undefined, uploadKeepFreeBytes: keepFree });
    try {
      const said = (await sendFromAnotherProcess('declared.bin', 32 * MiB, true, roomy.port)).answer;
      expect(said.status, JSON.stringify(said)).toBe(507);
      expect(said.body).toMatch(/^declared\.bin is 32 MiB, and the disk holding the workspace has [\d.]+ [GMK]iB free, of which [\d.]+ [GMK]iB is kept for runs and reports: not saved, free some space first/);
      // Without Content-Length the free space is looked at again as the bytes come: stopped long before the end.
      const { answer } = await sendFromAnotherProcess('streamed.bin', 256 * MiB, false, roomy.port);
      expect(answer.status, answer.body ?? answer.error).toBe(507);
      expect(answer.body).toMatch(/^streamed\.bin passed [\d.]+ MiB, and the disk holding the workspace has/);
      expect(answer.sent).toBeLessThan(256 * MiB);
      expect(listed().filter((n) => n.includes('declared.bin') || n.includes('streamed.bin'))).toEqual([]);
    } finally {
      await roomy.close();
    }
    // A disk short already: a sender that says no size is refused before its first byte, without a size to name.
    const full = await startServer({ services, rendererDir: renderer.dir, port: 0, token: TOKEN, log: () => undefined, uploadKeepFreeBytes: keepFree + 16 * MiB });
    try {
      const { answer } = await sendFromAnotherProcess('unsized.bin', 4 * MiB, false, full.port);
      expect(answer.status, answer.body ?? answer.error).toBe(507);
      expect(answer.body).toMatch(/^unsized\.bin was not started, and the disk holding the workspace has [\d.]+ [GMK]iB free, of which [\d.]+ [GMK]iB is kept for runs and reports/);
      expect(listed().filter((n) => n.includes('unsized.bin'))).toEqual([]);
    } finally {
      await full.close();
    }
  }, 60_000);

  it(`refuses a file once sources/ holds ${MAX_SOURCE_FILES.toLocaleString('en-US')}, and takes one again when some are gone`, async () => {
    const names = Array.from({ length: MAX_SOURCE_FILES }, (_, i) => `many-${String(i).padStart(5, '0')}.csv`);
    const already = listed().length;
    for (const name of names.slice(already)) writeFileSync(path.join(sources, name), '');
    try {
      const full = await send('PUT', '/upload/sources/one-more.csv', own(), 'a,b\n1,2\n');
      expect(full.status).toBe(507);
      expect(full.text).toBe(`sources/ holds ${MAX_SOURCE_FILES.toLocaleString('en-US')} files already, the most it takes: remove some before adding one-more.csv\n`);
      expect(listed()).not.toContain('one-more.csv');
    } finally {
      for (const name of names) rmSync(path.join(sources, name), { force: true });
    }
    await expectServing('one-more.csv');
    rmSync(path.join(sources, 'one-more.csv'));
  }, 60_000);
});

describe('serve mode: uploading data files into sources/', () => {
  it('streams a file into sources/, where it appears only when whole and the wizard lists it at once', async () => {
    const data = Buffer.alloc(24 * MiB);
    for (let i = 0; i < data.length; i += 4096) data.writeUInt32LE(i, i);
    const { req, answer } = openUpload('features.npy', data.length);
    req.write(data.subarray(0, 8 * MiB));
    // Mid-way: the bytes so far are in a hidden temp file beside the name, which does not exist yet.
    await expect.poll(() => listed().filter((n) => n.startsWith('.features.npy.') && n.endsWith('.part')).length, { timeout: 10_000 }).toBe(1);
    expect(listed()).not.toContain('features.npy');
    expect(await wizardFiles()).not.toContain('features.npy');
    req.end(data.subarray(8 * MiB));
    const done = (await answer) as Answer;
    expect(done.status, done.text).toBe(201);
    expect(done.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(done.text)).toEqual({ name: 'features.npy', path: 'sources/features.npy', bytes: data.length });
    expect(sha(readFileSync(path.join(sources, 'features.npy')))).toBe(sha(data));
    expect(listed()).toEqual(['features.npy']);
    expect(await wizardFiles()).toContain('features.npy');
  }, 30_000);

  it('takes a name with spaces and non-ASCII letters, percent-encoded as the page sends it', async () => {
    const answer = await send('PUT', `/upload/sources/${encodeURIComponent('Messwerte März 2026.csv')}`, own(), 'x,y\n1,2\n');
    expect(answer.status, answer.text).toBe(201);
    expect(JSON.parse(answer.text)).toMatchObject({ path: 'sources/Messwerte März 2026.csv', bytes: 8 });
    expect(readFileSync(path.join(sources, 'Messwerte März 2026.csv'), 'utf8')).toBe('x,y\n1,2\n');
  });

  it('takes a name of 255 bytes, the longest a file system keeps (its temp name stays under the limit)', async () => {
    const name = `${'é'.repeat(125)}.csv`; // 250 + 4 bytes of UTF-8
    expect(Buffer.byteLength(name)).toBe(254);
    const answer = await send('PUT', `/upload/sources/${encodeURIComponent(name)}`, own(), 'a\n1\n');
    expect(answer.status, answer.text).toBe(201);
    expect(readFileSync(path.join(sources, name), 'utf8')).toBe('a\n1\n');
  });

  it('refuses a file whose Content-Length is over the limit before reading it, naming the size and the limit', async () => {
    const { answer, growth } = await sendFromAnotherProcess('huge.bin', 200 * MiB, true);
    expect(answer.status, JSON.stringify(answer)).toBe(413);
    expect(answer.body).toBe('huge.bin is 200 MiB, more than the 96 MiB a file added to sources/ may be: not saved\n');
    // The rest was not read: far less than the 200 MiB announced went over the wire.
    expect(answer.sent).toBeLessThan(64 * MiB);
    expect(growth).toBeLessThan(40 * MiB);
    expect(listed().filter((n) => n.includes('huge'))).toEqual([]);
  }, 60_000);

  it('refuses a stream that passes the limit (no Content-Length), stops reading it, and keeps neither it nor its memory', async () => {
    const { answer, growth } = await sendFromAnotherProcess('stream.bin', 512 * MiB, false);
    expect(answer.status, JSON.stringify(answer)).toBe(413);
    expect(answer.body).toMatch(/^stream\.bin passed 96 MiB \([\d,]+ bytes received\), more than the 96 MiB a file added to sources\/ may be: not saved\n$/);
    // Reading stopped at the limit (plus what is dropped while the answer is read): the sender never got near 512 MiB.
    expect(answer.sent).toBeLessThan(200 * MiB);
    // A server that held the body would have grown by at least the 96 MiB it read.
    expect(growth).toBeLessThan(40 * MiB);
    expect(listed().filter((n) => n.includes('stream'))).toEqual([]);
    await expectServing('after-limit.csv');
  }, 60_000);

  it('streams a file near the limit without holding it in memory', async () => {
    const { answer, growth } = await sendFromAnotherProcess('near-limit.bin', 90 * MiB, true);
    expect(answer.status, JSON.stringify(answer)).toBe(201);
    expect(JSON.parse(answer.body!)).toEqual({ name: 'near-limit.bin', path: 'sources/near-limit.bin', bytes: 90 * MiB });
    expect(growth).toBeLessThan(40 * MiB);
    rmSync(path.join(sources, 'near-limit.bin'));
  }, 60_000);

  it('refuses bad names, naming the value, and writes nothing anywhere', async () => {
    const before = listed();
    // Nothing named by a case lands beside the workspace (the folder is shared: other tests' temp folders come and go).
    const landed = () => readdirSync(path.dirname(workspace.dir)).filter((n) => /escaped|secret/.test(n));
    const parent = landed();
    const cases: [string, number, string][] = [
      ['%2e%2e', 400, 'file name ".." is not a file name'],
      ['..%2F..%2Fescaped.csv', 400, 'file name "../../escaped.csv" holds a path separator'],
      ['..%5Cescaped.csv', 400, 'file name "..\\\\escaped.csv" holds a path separator'],
      ['a/b.csv', 400, '"a/b.csv" is a path'],
      ['.bashrc', 400, 'file name ".bashrc" starts with a dot'],
      ['bad%0Aname.csv', 400, 'file name "bad\\nname.csv" holds a control character (code 10)'],
      ['nul%00.csv', 400, 'holds a control character (code 0)'],
      ['csi%C2%9B2K.csv', 400, 'file name "csi\\u009b2K.csv" holds a control character (code 155)'],
      // Shown in lists and messages: a separator would break the line, a bidi mark reorder it ("data<RLO>vsc.exe" reads "dataexe.csv").
      ['line%E2%80%A8break.csv', 400, 'file name "line\\u2028break.csv" holds a line or paragraph separator (U+2028): rename the file'],
      ['data%E2%80%AEvsc.exe', 400, 'file name "data\\u202evsc.exe" holds a bidirectional formatting mark (U+202E), which reorders what is shown: rename the file'],
      ['a%E2%80%8Fb.csv', 400, 'holds a bidirectional formatting mark (U+200F)'],
      ['what%3F.csv', 400, `file name "what?.csv" holds '?'`],
      ['CON.csv', 400, 'file name "CON.csv" is a device name on Windows'],
      ['%E0%A4%A', 400, 'the file name is not valid percent-encoding'],
      ['', 400, 'no file name'],
      [`${'x'.repeat(300)}.csv`, 400, 'longer than the 255 bytes'],
    ];
    for (const [name, status, words] of cases) {
      const answer = await send('PUT', `/upload/sources/${name}`, own(), 'secret,data\n1,2\n');
      expect(answer.status, `${name}: ${answer.text}`).toBe(status);
      expect(answer.text, name).toContain(words);
    }
    expect(listed()).toEqual(before);
    expect(landed()).toEqual(parent);
  });

  it('refuses a name that is taken, by a file, a folder or a link, without touching what is there', async () => {
    writeFileSync(path.join(sources, 'iris.csv'), 'original\n');
    mkdirSync(path.join(sources, 'folder.csv'));
    symlinkSync(path.join(outside.dir, 'target.csv'), path.join(sources, 'link.csv'));
    for (const name of ['iris.csv', 'folder.csv', 'link.csv']) {
      const answer = await send('PUT', `/upload/sources/${name}`, own(), 'replaced\n');
      expect(answer.status, answer.text).toBe(409);
      expect(answer.text).toBe(`sources/${name} exists already: rename the file you add, or remove the one in sources/ first\n`);
    }
    expect(readFileSync(path.join(sources, 'iris.csv'), 'utf8')).toBe('original\n');
    // The dangling link was not followed: nothing was created where it points.
    expect(readdirSync(outside.dir)).toEqual([]);
    expect(listed().filter((n) => n.endsWith('.part'))).toEqual([]);
  });

  it('refuses a request without the token, with a wrong one, from another origin or site, and a plain form post', async () => {
    const noToken = { ...own() } as Record<string, string>;
    delete noToken['x-trainbench-token'];
    const refused: [string, string, Record<string, string>, number, string][] = [
      ['no token', 'PUT', noToken, 401, 'missing or wrong token'],
      ['wrong token', 'PUT', { ...own(), 'x-trainbench-token': 'v'.repeat(32) }, 401, 'missing or wrong token'],
      ['token in the URL only', 'PUT', noToken, 401, 'never in the URL'],
      ['another origin', 'PUT', { ...own(), origin: 'http://evil.example' }, 403, 'origin not allowed'],
      ['DNS rebinding', 'PUT', { ...own(), host: `evil.example:${server.port}`, origin: `http://evil.example:${server.port}` }, 403, 'origin not allowed'],
      ['another site', 'PUT', { ...own(), 'sec-fetch-site': 'cross-site' }, 403, 'not from another site (cross-site)'],
      // What a cross-site <form method=post> can send: a POST, a form content type, no header of its own.
      ['a form post', 'POST', { host: own().host, origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' }, 405, 'an upload is a PUT'],
      // Another site's fetch with the header is preflighted first, and the preflight is never allowed.
      ['a preflight', 'OPTIONS', { host: own().host, origin: 'http://evil.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'x-trainbench-token' }, 405, 'an upload is a PUT'],
    ];
    for (const [what, method, headers, status, words] of refused) {
      const target = what === 'token in the URL only' ? `/upload/sources/sneaky.csv?token=${TOKEN}` : '/upload/sources/sneaky.csv';
      const answer = await send(method, target, headers, 'a,b\n1,2\n');
      expect(answer.status, `${what}: ${answer.text}`).toBe(status);
      expect(answer.text, what).toContain(words);
      expect(answer.headers['access-control-allow-origin'], what).toBeUndefined();
    }
    expect(listed().filter((n) => n.includes('sneaky'))).toEqual([]);
  });

  it('removes the partial file when the sender goes mid-upload (the page pressed Cancel)', async () => {
    const { req, answer } = openUpload('cancelled.csv', 32 * MiB);
    req.write(Buffer.alloc(6 * MiB, 49));
    await expect.poll(() => listed().filter((n) => n.startsWith('.cancelled.csv.')).length, { timeout: 10_000 }).toBe(1);
    req.destroy();
    expect(await answer).toBeInstanceOf(Error);
    await expect.poll(() => listed().filter((n) => n.includes('cancelled')), { timeout: 10_000 }).toEqual([]);
    await expect.poll(() => logs.join('\n'), { timeout: 5_000 }).toMatch(/upload "cancelled\.csv" stopped: aborted/);
    await expectServing('after-cancel.csv');
  }, 30_000);

  it('drops a sender that stops sending, with its partial file', async () => {
    const { req } = openUpload('stalled.csv', 4 * MiB);
    req.on('error', () => undefined);
    req.write(Buffer.alloc(MiB, 50));
    await expect.poll(() => listed().filter((n) => n.startsWith('.stalled.csv.')).length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => logs.join('\n'), { timeout: STALL_MS + 10_000 }).toMatch(/upload "stalled\.csv" stopped: the sender sent nothing for 3 s/);
    await expect.poll(() => listed().filter((n) => n.includes('stalled')), { timeout: 5_000 }).toEqual([]);
    req.destroy();
  }, 30_000);
});

  it('writes on into the folder it opened when sources/ is swapped for a link mid-upload, and answers 409 when it is removed', async () => {
    // Swapped: the held folder (renamed, still in the workspace) gets the whole file; the link's target nothing.
    const { req, answer } = openUpload('swapped.csv', 4 * MiB);
    req.write(Buffer.alloc(2 * MiB, 51));
    await expect.poll(() => listed().filter((n) => n.startsWith('.swapped.csv.')).length, { timeout: 10_000 }).toBe(1);
    const moved = path.join(workspace.dir, 'sources-moved');
    renameSync(sources, moved);
    symlinkSync(outside.dir, sources);
    req.end(Buffer.alloc(2 * MiB, 51));
    const swapped = await answer;
    if (swapped instanceof Error) throw swapped;
    expect(swapped.status, swapped.text).toBe(201);
    expect(readdirSync(outside.dir)).toEqual([]);
    expect(readFileSync(path.join(moved, 'swapped.csv')).length).toBe(4 * MiB);
    rmSync(sources);
    renameSync(moved, sources);

    // Removed: the write stops with a refusal that says what happened, never an internal error.
    const gone = openUpload('removed.csv', 4 * MiB);
    gone.req.write(Buffer.alloc(2 * MiB, 52));
    await expect.poll(() => listed().filter((n) => n.startsWith('.removed.csv.')).length, { timeout: 10_000 }).toBe(1);
    renameSync(sources, moved);
    rmSync(moved, { recursive: true });
    gone.req.end(Buffer.alloc(2 * MiB, 52));
    const removed = await gone.answer;
    if (removed instanceof Error) throw removed;
    expect(removed.status, removed.text).toBe(409);
    expect(removed.text).toBe('sources/ was moved or removed while removed.csv was written: not saved, send it again\n');
    mkdirSync(sources);
    await expectServing('after-swap.csv');
  }, 30_000);

describe('serve mode: a body on any other route', () => {
  it('answers a GET that says it sends a body and closes its connection, so a trickled body holds nothing open', async () => {
    const socket = net.connect(server.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(`GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Length: 1000000000\r\n\r\n`);
    socket.write('x'); // the start of a body that would come a byte a minute
    const t0 = Date.now();
    await closed;
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toContain('only an upload takes a request body');
    await expectServing('after-trickle.csv');
  }, 30_000);
});

describe('serve mode: a sources/ that is a link', () => {
  it('refuses to write through sources -> a folder outside the workspace, or inside it', async () => {
    const linked = tempDir();
    const away = tempDir();
    const ownRenderer = tempDir();
    const own2: { services?: Services; server?: RunningServer } = {};
    try {
      symlinkSync(away.dir, path.join(linked.dir, 'sources'));
      own2.services = await createServices({ workspaceDir: linked.dir, engine: { entry: HOST_ENTRY } });
      own2.server = await startServer({ services: own2.services, rendererDir: ownRenderer.dir, port: 0, token: TOKEN, log: () => undefined });
      const headers = { ...own(), host: `127.0.0.1:${own2.server.port}`, origin: `http://127.0.0.1:${own2.server.port}` };
      const out = await send('PUT', '/upload/sources/planted.csv', headers, 'a,b\n1,2\n', own2.server.port);
      expect(out.status, out.text).toBe(400);
      expect(out.text).toContain('leads outside the workspace through a link');
      expect(readdirSync(away.dir)).toEqual([]);

      // A link to a folder of the workspace itself is refused too: files are written only into real folders.
      rmSync(path.join(linked.dir, 'sources'));
      symlinkSync(path.join(linked.dir, 'runs'), path.join(linked.dir, 'sources'));
      const inside = await send('PUT', '/upload/sources/planted.csv', headers, 'a,b\n1,2\n', own2.server.port);
      expect(inside.status, inside.text).toBe(422);
      expect(inside.text).toBe('sources is a link in the workspace: files are written only into its real folders, never through a link\n');
      expect(readdirSync(path.join(linked.dir, 'runs'))).toEqual([]);
    } finally {
      await own2.server?.close();
      await own2.services?.dispose();
      linked.cleanup();
      away.cleanup();
      ownRenderer.cleanup();
    }
  }, 30_000);
});
