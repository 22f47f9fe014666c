// Issue 40: `trainbench join CODE` on another node follows the hub of a job's launches. Against a hub that is not
// Trainbench's (a forged or hijacked address): a flood of launches starts a part once a second at most, a launch
// carrying variables that are not the probe's starts nothing, and when the hub goes away before the job ended, the
// part is stopped and join fails, saying so.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { encodeFollow } from '../../src-main/core/nodes/followers';
import { encodeJoin } from '../../src-main/core/script/probe-channel';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { runCli } from '../script/script-helpers';

const ws = tempDir();
afterAll(() => ws.cleanup());

/** A hub that, once join says its hello, runs `script` (what to send it) and then closes. */
async function fakeHub(script: (send: (m: object | string) => void) => Promise<void>): Promise<{ code: string; hello: Promise<Record<string, unknown>> }> {
  const token = randomBytes(32).toString('hex');
  let gotHello!: (h: Record<string, unknown>) => void;
  const hello = new Promise<Record<string, unknown>>((resolve) => (gotHello = resolve));
  const server = net.createServer((socket) => {
    socket.setEncoding('utf8');
    socket.on('error', () => undefined);
    socket.once('data', async (line: string) => {
      gotHello(JSON.parse(line.split('\n')[0]) as Record<string, unknown>);
      await script((m) => socket.write(typeof m === 'string' ? m : `${JSON.stringify(m)}\n`));
      socket.end();
      server.close();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { code: encodeFollow(`127.0.0.1:${(server.address() as net.AddressInfo).port}`, token), hello };
}

/** Killed: gone, or a zombie its new parent has not reaped yet (state Z). */
function aliveNotZombie(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const env = (i: number) => ({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: `t${i}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('trainbench join, following a hub', () => {
  it('starts a part once a second at most however fast launches come, and ends with 0 when the job is done', async () => {
    requireBuilt();
    const log = path.join(ws.dir, 'starts.log');
    const hub = await fakeHub(async (send) => {
      for (let i = 1; i <= 200; i++) send({ type: 'launch', n: i, env: env(i) });
      await sleep(1500);
      send({ type: 'done' });
    });
    const r = await runCli(['join', hub.code, '--', 'sh', '-c', `echo "$TB_PROBE_TOKEN" >> ${log}`], 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(await hub.hello).toMatchObject({ type: 'follow' });
    const starts = readFileSync(log, 'utf8').trim().split('\n');
    // The first at once, then the latest after the gap: never one process per message.
    expect(starts.length).toBeGreaterThanOrEqual(1);
    expect(starts.length).toBeLessThanOrEqual(3);
    expect(starts[0]).toBe('t1');
    expect(starts.at(-1)).toBe('t200');
  });

  it('starts nothing for a launch that carries variables other than the probe\'s, and fails when the hub goes before done', async () => {
    const marker = path.join(ws.dir, 'ran');
    const hub = await fakeHub(async (send) => {
      send({ type: 'launch', n: 1, env: { ...env(1), LD_PRELOAD: '/tmp/evil.so' } });
      send('x'.repeat(2 << 20)); // a line over the limit: the connection is dropped
    });
    const r = await runCli(['join', hub.code, '--', 'touch', marker], 60_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('launch 1 ignored: it names "LD_PRELOAD", not one of the probe\'s variables');
    expect(r.stderr).toContain('the measuring node closed the job before it ended');
    expect(existsSync(marker)).toBe(false);
  });

  // Re-attack of round 7: a one-launch code's part ended by itself and left a process that ignores TERM in its group.
  it("with one launch's code, stops what the part left in its group when it ends, before join exits", async () => {
    const pidFile = path.join(ws.dir, 'left.pid');
    const part = `(trap '' TERM; exec sleep 60) & echo $! > ${pidFile}`;
    const r = await runCli(['join', encodeJoin(env(1)), '--', 'sh', '-c', part], 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(aliveNotZombie(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  // Re-attack 9: a Ctrl-C while join waited for those leftovers ended join at once, with the leftover still running.
  it('a Ctrl-C while it waits for them kills them at once, and join still exits with the part\'s own code', async () => {
    requireBuilt();
    const pidFile = path.join(ws.dir, 'waited.pid');
    const part = `(trap '' TERM INT; exec sleep 60) & echo $! > ${pidFile}; exit 7`;
    const join = spawn(process.execPath, [CLI, 'join', encodeJoin(env(1)), '--', 'sh', '-c', part], { stdio: 'ignore' });
    const t0 = Date.now();
    await expect.poll(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', { timeout: 10_000 }).toBe(true);
    await sleep(1000); // the part has exited; join waits for what it left
    join.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => join.on('exit', (c) => resolve(c)));
    expect(code).toBe(7);
    expect(Date.now() - t0).toBeLessThan(4000); // not the whole 5 s grace
    expect(aliveNotZombie(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  // Attack round 7, finding 3: the part's leader ended on TERM, a process of its group that ignores TERM did not, and
  // join exited at once with the KILL still pending: the process ran on, reparented.
  it('when the hub goes, stops the whole part, a process that ignores TERM included, before it exits', async () => {
    const pidFile = path.join(ws.dir, 'stubborn.pid');
    const hub = await fakeHub(async (send) => {
      send({ type: 'launch', n: 1, env: env(1) });
      await sleep(1500);
    });
    const part = `(trap '' TERM; exec sleep 60) & echo $! > ${pidFile}; exec sleep 60`;
    const r = await runCli(['join', hub.code, '--', 'sh', '-c', part], 60_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('the measuring node closed the job before it ended');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(pid).toBeGreaterThan(0);
    expect(aliveNotZombie(pid)).toBe(false);
  });
});
