// Serve mode's downloads (issue 27 item 12) in a real `trainbench serve` process: a report and a
// run's folder as zips, by a one-time ticket or with the token in a header; and every refusal
// (no token, another origin, "../", a planted link, a FIFO, an oversize file) answered with a
// clear message while the process goes on serving.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync, closeSync, openSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { startServeProcess, type ServeProcess } from '../helpers/serve-process';
import { tempDir } from '../helpers/temp-dir';

const workspace = tempDir();
const tmp = tempDir();
let serve: ServeProcess;
let port: number;
let token: string;

const RUN = '20261127-101010-abcdef';
const REPORT = '0001-mlp-on-fashion-mnist';
const RUN_JSON = JSON.stringify({ schemaVersion: 1, id: RUN, kind: 'train', status: 'completed' }, null, 2);
const EVENTS = '{"type":"train.step","globalStep":1}\n'.repeat(2000);
const MARKDOWN = `# 1. MLP on fashion-mnist\n\n![Phases](phases.svg)\n`;
const SVG = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>\n';
const SECRET = path.join(tmp.dir, 'secret.txt');

function put(rel: string, text: string): void {
  const file = path.join(workspace.dir, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

beforeAll(async () => {
  put(`runs/${RUN}/run.json`, RUN_JSON);
  put(`runs/${RUN}/events.jsonl`, EVENTS);
  put(`runs/${RUN}/telemetry.jsonl`, '{"t":0,"gpus":[]}\n');
  put(`runs/${RUN}/logs/output.log`, 'epoch 1 done\n');
  const now = new Date().toISOString();
  const meta = { schemaVersion: 1, id: REPORT, number: 1, title: 'MLP on fashion-mnist', createdAt: now, updatedAt: now, runIds: [RUN], sections: ['status'], figures: [{ name: 'phases.svg', title: 'Phases', alt: 'Phases', runId: RUN }], notes: [], blocks: {} };
  put(`reports/${REPORT}/report.json`, JSON.stringify(meta));
  put(`reports/${REPORT}/${REPORT}.md`, MARKDOWN);
  put(`reports/${REPORT}/phases.svg`, SVG);
  writeFileSync(SECRET, 'not for the network\n');
  serve = await startServeProcess(workspace.dir);
  const url = new URL(serve.url);
  port = Number(url.port);
  token = url.searchParams.get('token')!;
}, 60_000);

afterAll(async () => {
  await serve?.stop();
  workspace.cleanup();
  tmp.cleanup();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One GET with exactly these headers (Host defaults to the loopback address the server printed). */
function get(target: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method: 'GET', headers: { host: `127.0.0.1:${port}`, ...headers }, timeout: 20_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${target} took more than 20 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** A contract call over the WebSocket, as the page makes it. */
async function call(method: string, params: unknown): Promise<{ ok: boolean; result?: Record<string, unknown>; error?: { code: string; message: string } }> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api?token=${token}`, { origin: `http://127.0.0.1:${port}` });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const answer = await new Promise<Record<string, unknown>>((resolve) => {
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (msg.type === 'response') resolve(msg);
    });
    ws.send(JSON.stringify({ type: 'request', id: 7, method, params }));
  });
  ws.close();
  return answer as never;
}

const PY_READ = `
import json, sys, zipfile, base64
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(json.dumps({i.filename: base64.b64encode(z.read(i)).decode() for i in z.infolist()}))
`;

let zips = 0;
/** A zip's entries as text, read by Python's zipfile after `unzip -t` found no error. */
function entries(zip: Buffer): Record<string, string> {
  const file = path.join(tmp.dir, `d${zips++}.zip`);
  writeFileSync(file, zip);
  expect(execFileSync('unzip', ['-t', file], { encoding: 'utf8' })).toContain('No errors detected');
  const raw = JSON.parse(execFileSync('python3', ['-c', PY_READ, file], { encoding: 'utf8' })) as Record<string, string>;
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** The process is there and a ticket still buys a download. */
async function expectServing(): Promise<void> {
  expect(serve.child.exitCode).toBeNull();
  const ticket = await call('downloads.prepare', { kind: 'report', id: REPORT });
  expect(ticket.ok).toBe(true);
  const answer = await get(ticket.result!.url as string);
  expect(answer.status).toBe(200);
  expect(Object.keys(entries(answer.body))).toContain(`${REPORT}/${REPORT}.md`);
}

const withToken = () => ({ 'x-trainbench-token': token });

describe('serve mode downloads', () => {
  it("zips a run's folder for a one-time ticket, streamed, with a safe file name", async () => {
    const ticket = await call('downloads.prepare', { kind: 'run', id: RUN });
    expect(ticket.ok).toBe(true);
    expect(ticket.result).toMatchObject({ fileName: `run-${RUN}.zip`, files: 4, skipped: [] });
    const url = ticket.result!.url as string;
    expect(url).toMatch(/^\/download\/ticket\/[\w-]{32}$/);
    expect(url).not.toContain(token);
    // A page's own fetch: same origin.
    const answer = await get(url, { 'sec-fetch-site': 'same-origin' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/zip');
    expect(answer.headers['content-disposition']).toBe(`attachment; filename="run-${RUN}.zip"`);
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(entries(answer.body)).toEqual({
      [`${RUN}/events.jsonl`]: EVENTS,
      [`${RUN}/logs/output.log`]: 'epoch 1 done\n',
      [`${RUN}/run.json`]: RUN_JSON,
      [`${RUN}/telemetry.jsonl`]: '{"t":0,"gpus":[]}\n',
    });
    // Good once.
    const again = await get(url);
    expect(again.status).toBe(403);
    expect(again.body.toString()).toMatch(/used already or has expired/);
  });

  it('zips a report (markdown and its figures) for a script that sends the token in a header', async () => {
    const answer = await get(`/download/report/${REPORT}`, withToken());
    expect(answer.status).toBe(200);
    expect(answer.headers['content-disposition']).toBe(`attachment; filename="${REPORT}.zip"`);
    expect(entries(answer.body)).toEqual({ [`${REPORT}/${REPORT}.md`]: MARKDOWN, [`${REPORT}/phases.svg`]: SVG });
    const bearer = await get(`/download/run/${RUN}`, { authorization: `Bearer ${token}` });
    expect(bearer.status).toBe(200);
  });

  it('refuses a request without the token, or with a wrong one', async () => {
    const wrong: Record<string, string>[] = [{}, { 'x-trainbench-token': 'x'.repeat(32) }, { authorization: 'Bearer nope' }];
    for (const headers of wrong) {
      const answer = await get(`/download/run/${RUN}`, headers);
      expect(answer.status).toBe(401);
      expect(answer.body.toString()).toMatch(/missing or wrong token: send it in the x-trainbench-token header/);
    }
    // The token in the URL is not how downloads are asked for.
    expect((await get(`/download/run/${RUN}?token=${token}`)).status).toBe(401);
    expect((await get('/download/ticket/not-a-ticket-at-all-0123456789')).status).toBe(403);
    await expectServing();
  });

  it("refuses another site's page and a DNS-rebinding Host, token or not", async () => {
    const ticket = await call('downloads.prepare', { kind: 'run', id: RUN });
    const refusals: [Record<string, string>, RegExp][] = [
      [{ ...withToken(), origin: 'http://evil.example' }, /origin not allowed/],
      [{ ...withToken(), host: `evil.example:${port}` }, /origin not allowed/],
      [{ ...withToken(), 'sec-fetch-site': 'cross-site' }, /not from another site \(cross-site\)/],
    ];
    for (const [headers, message] of refusals) {
      const answer = await get(`/download/run/${RUN}`, headers);
      expect(answer.status).toBe(403);
      expect(answer.body.toString()).toMatch(message);
    }
    // A page of another site that learnt a ticket is refused before the ticket is spent.
    const crossSite = await get(ticket.result!.url as string, { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    expect((await get(ticket.result!.url as string)).status).toBe(200);
    expect((await get(`/download/run/${RUN}`, { ...withToken(), 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    const post = await new Promise<number>((resolve) => {
      http.request({ host: '127.0.0.1', port, path: `/download/run/${RUN}`, method: 'POST', headers: withToken() }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).end();
    });
    expect(post).toBe(405);
    await expectServing();
  });

  it('refuses ids that climb out of their folder, by the path or through the API', async () => {
    const attempts: [string, number, RegExp][] = [
      [`/download/run/..%2F..%2F${path.basename(tmp.dir)}`, 400, /is not a run id/],
      ['/download/run/..', 400, /is not a run id/],
      ['/download/run/%2e%2e', 400, /is not a run id/],
      ['/download/run/../reports', 404, /no such download/],
      ['/download/report/..%2Fruns', 400, /is not a report id/],
      ['/download/report/0002-not-there', 404, /there is no report 0002-not-there/],
      ['/download/run/%zz', 400, /not valid percent-encoding/],
      // What the path named is shown escaped, in the refusal's words too (re-attack 18).
      ['/download/run/a%1b%5b2Jb%e2%80%ae', 400, /^run a\\x1b\[2Jb\\u202e cannot be downloaded: "a\\u001b\[2Jb\\u202e" is not a run id/],
    ];
    for (const [target, status, message] of attempts) {
      const answer = await get(target, withToken());
      expect(answer.status, target).toBe(status);
      expect(answer.body.toString(), target).toMatch(message);
    }
    const viaApi = await call('downloads.prepare', { kind: 'run', id: '../reports' });
    expect(viaApi.ok).toBe(false);
    expect(viaApi.error).toMatchObject({ code: 'E_BAD_REQUEST' });
    expect(viaApi.error!.message).toMatch(/ids are letters, digits/);
    await expectServing();
  });

  it('leaves out a planted link and a FIFO, lists them, and never reads through them', async () => {
    const run = '20261127-111111-feed01';
    put(`runs/${run}/run.json`, RUN_JSON);
    symlinkSync(SECRET, path.join(workspace.dir, 'runs', run, 'evil.log'));
    symlinkSync(tmp.dir, path.join(workspace.dir, 'runs', run, 'outside'));
    execFileSync('mkfifo', [path.join(workspace.dir, 'runs', run, 'pipe.jsonl')]);
    // A name that would retitle and redraw the terminal serve logs to (re-attack 12): shown escaped everywhere.
    symlinkSync(SECRET, path.join(workspace.dir, 'runs', run, 'x\x1b]0;PWNED\x07\x1b[2K\rfine'));
    const ticket = await call('downloads.prepare', { kind: 'run', id: run });
    expect(ticket.result).toMatchObject({
      files: 1,
      skipped: [
        { name: `${run}/evil.log`, reason: 'a link (not followed)' },
        { name: `${run}/outside`, reason: 'a link (not followed)' },
        { name: `${run}/pipe.jsonl`, reason: 'a special file (FIFO, socket or device)' },
        { name: `${run}/x\\x1b]0;PWNED\\x07\\x1b[2K\\rfine`, reason: 'a link (not followed)' },
      ],
    });
    const answer = await get(ticket.result!.url as string);
    expect(answer.status).toBe(200);
    const got = entries(answer.body);
    expect(Object.keys(got).sort()).toEqual([`${run}/SKIPPED.txt`, `${run}/run.json`]);
    expect(got[`${run}/SKIPPED.txt`]).toBe(
      `Left out of this download:\n${run}/evil.log: a link (not followed)\n${run}/outside: a link (not followed)\n${run}/pipe.jsonl: a special file (FIFO, socket or device)\n${run}/x\\x1b]0;PWNED\\x07\\x1b[2K\\rfine: a link (not followed)\n`,
    );
    // serve's own log names what it left out, escaped, on one line.
    await expect.poll(() => serve.output()).toContain(`left out ${run}/evil.log`);
    expect(serve.output()).toContain(`${run}/x\\x1b]0;PWNED\\x07\\x1b[2K\\rfine (a link (not followed))`);
    // eslint-disable-next-line no-control-regex -- control characters are what it looks for
    expect(serve.output()).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
    expect(answer.body.includes(Buffer.from('not for the network'))).toBe(false);

    // A figure of a report replaced by a link: the report comes without it, and says so.
    const report = '0002-linked-figure';
    const now = new Date().toISOString();
    put(`reports/${report}/report.json`, JSON.stringify({ schemaVersion: 1, id: report, number: 2, title: 'x', createdAt: now, updatedAt: now, runIds: [], sections: ['status'], figures: [{ name: 'phases.svg', title: 'P', alt: 'P', runId: null }], notes: [], blocks: {} }));
    put(`reports/${report}/${report}.md`, MARKDOWN);
    symlinkSync(SECRET, path.join(workspace.dir, 'reports', report, 'phases.svg'));
    const linked = await get(`/download/report/${report}`, withToken());
    expect(linked.status).toBe(200);
    expect(Object.keys(entries(linked.body)).sort()).toEqual([`${report}/${report}.md`, `${report}/SKIPPED.txt`]);
    expect(linked.body.includes(Buffer.from('not for the network'))).toBe(false);

    // The markdown itself a link: no report without its text.
    const noText = '0003-linked-markdown';
    put(`reports/${noText}/report.json`, JSON.stringify({ schemaVersion: 1, id: noText, number: 3, title: 'y', createdAt: now, updatedAt: now, runIds: [], sections: ['status'], figures: [], notes: [], blocks: {} }));
    symlinkSync(SECRET, path.join(workspace.dir, 'reports', noText, `${noText}.md`));
    const refused = await get(`/download/report/${noText}`, withToken());
    expect(refused.status).toBe(400);
    expect(refused.body.toString()).toMatch(new RegExp(`reports/${noText}/${noText}.md: ${noText}.md is a link.*cannot be downloaded without its markdown`));

    // The run folder itself a link: refused, nothing read, and said as it is (the runs list shows it as unreadable, not gone).
    symlinkSync(tmp.dir, path.join(workspace.dir, 'runs', '20261127-121212-aaaaaa'));
    const folderLink = await get('/download/run/20261127-121212-aaaaaa', withToken());
    expect(folderLink.status).toBe(422);
    expect(folderLink.body.toString()).toMatch(/^run 20261127-121212-aaaaaa cannot be downloaded: path "runs\/20261127-121212-aaaaaa" leads outside the workspace through a link/);
    expect(folderLink.body.includes(Buffer.from('not for the network'))).toBe(false);
    // A file where a report's folder belongs: the same.
    put('reports/0004-a-file', 'not a folder');
    const fileReport = await get('/download/report/0004-a-file', withToken());
    expect(fileReport.status).toBe(422);
    expect(fileReport.body.toString()).toMatch(/^report 0004-a-file cannot be downloaded: reports\/0004-a-file is not a folder/);
    await expectServing();
  });

  it('leaves out, and lists, files whose names a zip cannot hold, sending the rest (attack round 8)', async () => {
    const run = '20261127-171717-ba5e11';
    put(`runs/${run}/run.json`, RUN_JSON);
    // Legal names here; a backslash is a separator where the zip is opened, a control character no name at all.
    put(`runs/${run}/..\\..\\Users\\Public\\evil.bat`, 'x');
    put(`runs/${run}/bell\x07.txt`, 'x');
    mkdirSync(path.join(workspace.dir, 'runs', run, 'a\\b'));
    put(`runs/${run}/a\\b/inner.txt`, 'x');
    const ticket = await call('downloads.prepare', { kind: 'run', id: run });
    expect(ticket.result).toMatchObject({ files: 1 });
    const why = 'a name a zip cannot hold (a backslash or a control character)';
    expect(new Set(ticket.result!.skipped as unknown[])).toEqual(
      new Set([
        { name: `${run}/..\\..\\Users\\Public\\evil.bat`, reason: why },
        { name: `${run}/bell\\x07.txt`, reason: why },
        { name: `${run}/a\\b`, reason: why },
      ]),
    );
    const answer = await get(ticket.result!.url as string);
    expect(answer.status).toBe(200);
    expect(Object.keys(entries(answer.body)).sort()).toEqual([`${run}/SKIPPED.txt`, `${run}/run.json`]);
  });

  it('names at most 200 entries left out, and counts the rest', async () => {
    const run = '20261127-161616-11e5e5';
    put(`runs/${run}/run.json`, RUN_JSON);
    for (let i = 0; i < 205; i++) symlinkSync(SECRET, path.join(workspace.dir, 'runs', run, `l${String(i).padStart(3, '0')}`));
    const ticket = await call('downloads.prepare', { kind: 'run', id: run });
    const skipped = ticket.result!.skipped as { name: string; reason: string }[];
    expect(skipped.length).toBe(201);
    expect(skipped[199]).toEqual({ name: `${run}/l199`, reason: 'a link (not followed)' });
    expect(skipped[200]).toEqual({ name: '…', reason: '5 more entries left out (links, special files or deep folders)' });
    const answer = await get(ticket.result!.url as string);
    expect(Object.keys(entries(answer.body)).sort()).toEqual([`${run}/SKIPPED.txt`, `${run}/run.json`]);
  });

  it('refuses an oversize file and an oversize total, naming the file, before sending a byte of zip', async () => {
    const run = '20261127-131313-b16b16';
    put(`runs/${run}/run.json`, RUN_JSON);
    // Sparse: the size a listing reports, without the disk.
    const big = path.join(workspace.dir, 'runs', run, 'checkpoint.safetensors');
    closeSync(openSync(big, 'w'));
    truncateSync(big, 600 * 1024 * 1024);
    const answer = await get(`/download/run/${run}`, withToken());
    expect(answer.status).toBe(413);
    expect(answer.headers['content-type']).toMatch(/^text\/plain/);
    expect(answer.body.toString()).toMatch(new RegExp(`runs/${run}/checkpoint.safetensors is 600.0 MiB, more than the 512.0 MiB a download includes per file: not downloaded`));
    const viaApi = await call('downloads.prepare', { kind: 'run', id: run });
    expect(viaApi.error).toMatchObject({ code: 'E_DATA' });
    expect(viaApi.error!.message).toMatch(/checkpoint.safetensors is 600.0 MiB/);

    const many = '20261127-141414-c0ffee';
    for (let i = 0; i < 5; i++) {
      const part = path.join(workspace.dir, 'runs', many, `shard-${i}.bin`);
      mkdirSync(path.dirname(part), { recursive: true });
      closeSync(openSync(part, 'w'));
      truncateSync(part, 500 * 1024 * 1024);
    }
    const total = await get(`/download/run/${many}`, withToken());
    expect(total.status).toBe(413);
    expect(total.body.toString()).toMatch(new RegExp(`more than the 2048.0 MiB a download includes \\(passed at runs/${many}/shard-4.bin, 500.0 MiB\\)`));
    await expectServing();
  });
});
