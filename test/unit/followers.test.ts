// Issue 40: the hub the other nodes of a job follow its launches through. Only a node with the code's token follows;
// one that joins while a launch runs is sent it at once; a flood of bytes before the hello is cut; the job's end says
// done to every node.
import net from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import type { Followers } from '../../src-main/core/nodes/followers';
import { decodeFollow, openFollowers } from '../../src-main/core/nodes/followers';

let hub: Followers | null = null;
afterEach(async () => {
  await hub?.close();
  hub = null;
});

/** A node: connects, says `hello`, and collects the lines it is sent until the hub closes it. */
function node(code: string, hello: string) {
  const { host, port } = decodeFollow(code);
  const socket = net.connect({ host, port });
  const lines: Record<string, unknown>[] = [];
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('connect', () => socket.write(hello));
  socket.on('error', () => undefined);
  socket.on('data', (d: string) => {
    buffered += d;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>);
      buffered = buffered.slice(nl + 1);
    }
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  /** Resolves once `n` lines have arrived. */
  const got = async (n: number) => {
    while (lines.length < n) await new Promise((r) => setTimeout(r, 10));
  };
  return { socket, lines, closed, got };
}

const tokenOf = (code: string) => decodeFollow(code).token;
const follow = (code: string) => `${JSON.stringify({ type: 'follow', token: tokenOf(code) })}\n`;

describe('the hub the other nodes follow', () => {
  it('sends each launch and its end to the nodes with the token, a late node the launch in flight, and done at the end', async () => {
    hub = await openFollowers('127.0.0.1');
    const early = node(hub.code, follow(hub.code));
    await new Promise((r) => early.socket.once('connect', r));
    await new Promise((r) => setTimeout(r, 50)); // its hello read
    hub.launch({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't1' });
    await early.got(1);
    const late = node(hub.code, follow(hub.code));
    await late.got(1); // joined while the launch runs: sent it at once
    hub.stop();
    const h = hub;
    hub = null;
    await h.close();
    await Promise.all([early.closed, late.closed]);
    const launch = { type: 'launch', n: 1, env: { TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't1' } };
    expect(early.lines).toEqual([launch, { type: 'stop', n: 1 }, { type: 'done' }]);
    expect(late.lines).toEqual([launch, { type: 'stop', n: 1 }, { type: 'done' }]);
  });

  it('closes a node with a wrong token, one that sends no line, and one that floods before its hello, sending them nothing', async () => {
    hub = await openFollowers('127.0.0.1');
    hub.launch({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't1' });
    const wrong = node(hub.code, `${JSON.stringify({ type: 'follow', token: '0'.repeat(64) })}\n`);
    const flood = node(hub.code, 'x'.repeat(64 * 1024));
    const notJson = node(hub.code, 'not json\n');
    // Round 6, finding 1: `null` (and numbers, arrays) as the hello threw inside the hub and ended its process.
    const nulls = ['null\n', '5\n', '[1]\n', '"x"\n'].map((h) => node(hub!.code, h));
    await Promise.all([wrong.closed, flood.closed, notJson.closed, ...nulls.map((n) => n.closed)]);
    for (const n of [wrong, flood, notJson, ...nulls]) expect(n.lines).toEqual([]);
  });

  it('refuses a code that is not one, naming what is missing', () => {
    const code = (body: unknown) => `tbf1.${Buffer.from(JSON.stringify(body)).toString('base64url')}`;
    expect(() => decodeFollow(code({ address: '10.0.0.1:80' }))).toThrow('it has no token');
    expect(() => decodeFollow(code({ address: '10.0.0.1', token: 'a'.repeat(64) }))).toThrow('it has no address host:port');
    expect(() => decodeFollow(code({ address: '10.0.0.1:99999', token: 'a'.repeat(64) }))).toThrow('it has no address host:port');
    expect(() => decodeFollow('tbf1.!!!')).toThrow('its body does not decode');
    expect(() => decodeFollow(`tbf1.${'a'.repeat(2000)}`)).toThrow('more than 1024');
    expect(decodeFollow(code({ address: '[fd00::1]:4000', token: 'a'.repeat(64) }))).toEqual({ host: 'fd00::1', port: 4000, token: 'a'.repeat(64) });
  });

  // Round 6, finding 4: 512 silent connections kept every real node out.
  it('lets a node in past hundreds of silent connections, closing the oldest of them', async () => {
    hub = await openFollowers('127.0.0.1');
    const silent = Array.from({ length: 300 }, () => node(hub!.code, ''));
    await new Promise((r) => setTimeout(r, 200));
    hub.launch({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't1' });
    const real = node(hub.code, follow(hub.code));
    await real.got(1);
    expect(real.lines[0]).toMatchObject({ type: 'launch', n: 1 });
    for (const s of silent) s.socket.destroy();
  });
  it("hears a node's part of the running launch fail, by the node's name, and nothing else it says", async () => {
    hub = await openFollowers('127.0.0.1');
    const failures: string[] = [];
    const off = hub.onPartFailed((what) => failures.push(what));
    const hello = `${JSON.stringify({ type: 'follow', token: tokenOf(hub.code), node: 'node-b\x1b[2J' })}\n`;
    const b = node(hub.code, hello);
    await new Promise((r) => b.socket.once('connect', r));
    await new Promise((r) => setTimeout(r, 50));
    const say = async (m: unknown) => {
      b.socket.write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`);
      await new Promise((r) => setTimeout(r, 50));
    };
    await say({ type: 'exited', n: 1, code: 1 }); // no launch runs yet
    hub.launch({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't1' });
    await b.got(1);
    for (const m of [{ type: 'exited', n: 1, code: 0 }, { type: 'exited', n: 7, code: 1 }, { type: 'exited', n: 1, code: '1' }, 'not json', 'null', { type: 'other', n: 1, code: 1 }]) await say(m);
    expect(failures).toEqual([]);
    await say({ type: 'exited', n: 1, code: 134 });
    expect(failures).toEqual(["node node-b\\x1b[2J's part of the job exited with code 134 (signal 6)"]);
    hub.stop();
    await say({ type: 'exited', n: 1, code: 143 }); // stopped by this node: not a failure
    off();
    hub.launch({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't2' });
    await b.got(3);
    await say({ type: 'exited', n: 2, code: 1 }); // no one listens any more
    expect(failures).toHaveLength(1);
    // A line longer than a hello closes the node.
    b.socket.write('x'.repeat(8192));
    await b.closed;
  });
  it("reads a node's flood of short lines no faster than its rate, losing none of what it says", async () => {
    const rate = 128 << 10;
    hub = await openFollowers('127.0.0.1', { bytesPerSec: rate });
    const failures: string[] = [];
    hub.onPartFailed((what) => failures.push(what));
    const b = node(hub.code, follow(hub.code));
    await new Promise((r) => b.socket.once('connect', r));
    await new Promise((r) => setTimeout(r, 50));
    hub.launch({ TB_PROBE_ADDR: '127.0.0.1:9', TB_PROBE_TOKEN: 't1' });
    await b.got(1);
    // 512 KiB of lines the hub parses and ignores, then the one that counts: read at 128 KiB/s, it comes ~3 s later.
    const noise = `${JSON.stringify({ type: 'noise' })}\n`.repeat((512 << 10) / 17);
    const t0 = Date.now();
    b.socket.write(noise);
    b.socket.write(`${JSON.stringify({ type: 'exited', n: 1, code: 1 })}\n`);
    let lag = 0;
    while (failures.length === 0 && Date.now() - t0 < 20_000) {
      const t = Date.now();
      await new Promise((r) => setTimeout(r, 10));
      lag = Math.max(lag, Date.now() - t - 10);
    }
    const took = Date.now() - t0;
    expect(failures).toEqual(["node 127.0.0.1's part of the job exited with code 1"]);
    expect(took).toBeGreaterThan(((noise.length - rate) / rate) * 1000 * 0.8);
    expect(lag, 'the event loop was held while the flood was read').toBeLessThan(500);
    expect(b.socket.destroyed).toBe(false);
  }, 30_000);
});
