// The probe channel as the collector of a job across machines (issue 40): it listens where it is told, answers a
// rank's clock probes, keeps each rank's collectives, and stays bounded against a wrong token, a flood, an
// oversized line and too many connections, naming each bad sender once while the good ranks are heard.
import net from 'node:net';

import { describe, expect, it } from 'vitest';

import { openProbeChannel } from '../../src-main/core/script/probe-channel';

const hello = (token: string, rank: number) => JSON.stringify({ type: 'hello', token, pid: 100 + rank, rank, localRank: rank, worldSize: 4, python: '3.11', node: 'node-a', nodeRank: 0 }) + '\n';
const step = (n: number) => JSON.stringify({ type: 'step', step: n, durMs: 5, samples: 8, batches: 1, dataMs: 1, phasesMs: { forward: 1, loss: 0, backward: 1, optimizer: 1 }, timing: 'host-clock' }) + '\n';

function connect(address: string): Promise<net.Socket> {
  const at = address.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(address.slice(at + 1)), address.slice(0, at), () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves with the first line the server writes back. */
function firstLine(s: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      got += d;
      const nl = got.indexOf('\n');
      if (nl >= 0) resolve(got.slice(0, nl));
    });
  });
}

const closed = (s: net.Socket) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

describe('probe channel as a collector', () => {
  it('listens on the address it is given and answers a clock probe with its own time on receipt and reply', async () => {
    const channel = await openProbeChannel({ host: '127.0.0.2' });
    expect(channel.address).toMatch(/^127\.0\.0\.2:\d+$/);
    const s = await connect(channel.address);
    const reply = firstLine(s);
    const t0 = Date.now() - 250; // a rank whose clock is 250 ms behind
    s.write(hello(channel.token, 0) + JSON.stringify({ type: 'clock', t0 }) + '\n');
    const r = JSON.parse(await reply) as { type: string; t0: number; t1: number; t2: number };
    expect(r.type).toBe('clock');
    expect(r.t0).toBe(t0);
    expect(r.t2).toBeGreaterThanOrEqual(r.t1);
    // NTP's offset estimate from the four times: the 250 ms the rank's clock is behind, within half the round
    // trip (NTP's own bound; a fixed ±10 ms failed once on a loaded CI machine whose outbound leg was slow).
    const t3 = Date.now() - 250;
    const offset = (r.t1 - t0 + (r.t2 - t3)) / 2;
    const roundTrip = t3 - t0 - (r.t2 - r.t1);
    expect(Math.abs(offset - 250)).toBeLessThanOrEqual(roundTrip / 2 + 1);
    expect(roundTrip).toBeLessThan(5000);
    s.write(JSON.stringify({ type: 'clockOffset', at: 'start', offsetMs: 250.2, uncertaintyMs: 0.1, probes: 8 }) + '\n');
    s.write(JSON.stringify({ type: 'collectives', step: 1, items: [{ index: 0, op: 'allreduce', arriveMs: 1000.5, doneMs: 1004.25, bytes: 26214400 }] }) + '\n');
    s.end();
    await channel.close();
    expect(channel.connections[0].hello).toMatchObject({ rank: 0, node: 'node-a', nodeRank: 0 });
    // The clock probe is answered, not kept; the offset and the collectives are.
    expect(channel.connections[0].messages.map((m) => m.type)).toEqual(['clockOffset', 'collectives']);
    expect(channel.problems).toEqual([]);
  });

  it('names a sender without the token and does not hear it; the ranks with it are heard', async () => {
    const channel = await openProbeChannel();
    const intruder = await connect(channel.address);
    intruder.write(hello('0'.repeat(32), 0) + step(1));
    await closed(intruder);
    const rank = await connect(channel.address);
    rank.write(hello(channel.token, 1) + step(1));
    rank.end();
    await channel.close();
    expect(channel.connections.map((c) => c.hello.rank)).toEqual([1]);
    expect(channel.problems).toEqual([expect.stringMatching(/^127\.0\.0\.1:\d+ did not show this job's token: it was not heard$/)]);
  });

  it('drops what a flooding rank sends over its rate, names it once, and keeps hearing the others', async () => {
    const channel = await openProbeChannel({ bytesPerSec: 64 * 1024 });
    const flood = await connect(channel.address);
    flood.write(hello(channel.token, 2));
    const lines = Array.from({ length: 20_000 }, (_, i) => step(i + 1)).join('');
    for (let i = 0; i < 4; i++) flood.write(lines); // ~16 MiB against 256 KiB of burst
    const calm = await connect(channel.address);
    calm.write(hello(channel.token, 3) + step(1) + step(2));
    flood.end();
    calm.end();
    await channel.close();
    const [flooder, quiet] = channel.connections;
    expect(flooder.hello.rank).toBe(2);
    expect(flooder.messages.length).toBeGreaterThan(0);
    expect(flooder.messages.length).toBeLessThan(20_000);
    expect(quiet.messages).toHaveLength(2);
    expect(channel.problems).toEqual([expect.stringMatching(/^rank 2 \(127\.0\.0\.1:\d+\) sent more than 64 KiB\/s: its lines over that were dropped$/)]);
    expect(channel.rejected).toBeGreaterThan(0);
  });

  it('closes a connection that sends a 64 MiB line, naming it, without holding it', async () => {
    const channel = await openProbeChannel({ bytesPerSec: 1 << 30 });
    const big = await connect(channel.address);
    big.on('error', () => undefined); // the channel cuts it mid-write
    big.write(hello(channel.token, 0));
    const chunk = 'x'.repeat(1 << 20);
    for (let i = 0; i < 64 && !big.destroyed; i++) big.write(chunk);
    await closed(big);
    await channel.close();
    expect(channel.problems).toEqual([expect.stringMatching(/^rank 0 \(127\.0\.0\.1:\d+\) sent a line over 1 MiB: its connection was closed$/)]);
  });

  it('refuses connections over its limit, naming the first refused, and hears those within it', async () => {
    const channel = await openProbeChannel({ maxConnections: 2 });
    const a = await connect(channel.address);
    const b = await connect(channel.address);
    a.write(hello(channel.token, 0));
    b.write(hello(channel.token, 1));
    await new Promise((r) => setTimeout(r, 50));
    const c = await connect(channel.address);
    c.on('error', () => undefined);
    await closed(c);
    a.end();
    b.end();
    await channel.close();
    expect(channel.connections.map((x) => x.hello.rank)).toEqual([0, 1]);
    expect(channel.problems).toEqual([expect.stringMatching(/^more than 2 connections: 127\.0\.0\.1:\d+ and later ones were refused$/)]);
  });

  // Attack round 7, finding 1: a token holder that said hello, closed and connected again, 80,000 times with 60 KB
  // hellos, grew serve's heap to 4 GB and ended it. A rank says hello once, a hello is at most 4 KiB, and a launch
  // hears at most its connection limit of ranks.
  it('hears each rank once, refuses an oversized hello, and stops hearing new ranks past its limit, however they reconnect', async () => {
    const channel = await openProbeChannel({ maxConnections: 3 });
    const sayHello = async (line: string) => {
      const s = await connect(channel.address);
      s.on('error', () => undefined);
      s.write(line);
      await new Promise((r) => setTimeout(r, 30));
      s.destroy();
      await closed(s);
    };
    for (let i = 0; i < 20; i++) await sayHello(hello(channel.token, 0));
    await sayHello(hello(channel.token, 1).replace('"python":"3.11"', `"python":"3.11","pad":"${'x'.repeat(60_000)}"`));
    for (let rank = 1; rank < 10; rank++) await sayHello(hello(channel.token, rank));
    await channel.close();
    expect(channel.connections.map((x) => x.hello.rank)).toEqual([0, 1, 2]);
    expect(channel.problems).toEqual([
      expect.stringMatching(/^rank 0 said hello a second time \(127\.0\.0\.1:\d+\): its connection was closed$/),
      expect.stringMatching(/^127\.0\.0\.1:\d+ did not show this job's token: it was not heard$/),
      expect.stringMatching(/^more than 3 ranks said hello \(127\.0\.0\.1:\d+ among them\): its connection was closed$/),
    ]);
  });

  // Attack round 5, finding B: 4,090 connections without the token, each holding 1 MiB less a byte with no newline,
  // ran the benchmark out of memory; 4,100 silent ones kept the job's ranks out.
  it('closes a connection that sends more than a hello before showing the token, and hears the ranks', async () => {
    const channel = await openProbeChannel();
    const fat = await Promise.all(Array.from({ length: 20 }, () => connect(channel.address)));
    for (const f of fat) {
      f.on('error', () => undefined);
      f.write('x'.repeat(64 << 10)); // no newline: a line that would be buffered up to 1 MiB
    }
    await Promise.all(fat.map(closed));
    const rank = await connect(channel.address);
    rank.write(hello(channel.token, 0) + step(1));
    rank.end();
    await channel.close();
    expect(channel.connections.map((c) => c.hello.rank)).toEqual([0]);
    expect(channel.problems).toEqual([expect.stringMatching(/^127\.0\.0\.1:\d+ did not show this job's token: it was not heard$/)]);
  });

  // Round 6, finding 5: lines that are not JSON were skipped before the hello, so a connection could stream them.
  it('closes a connection whose first line is not a hello', async () => {
    const channel = await openProbeChannel();
    const junk = await connect(channel.address);
    junk.on('error', () => undefined);
    junk.write('x\n'.repeat(10_000));
    await closed(junk);
    await channel.close();
    expect(channel.connections).toEqual([]);
    expect(channel.problems).toEqual([expect.stringMatching(/did not show this job's token: it was not heard$/)]);
  });

  it('closes the oldest of too many connections waiting to show the token, so a rank always gets in', async () => {
    const channel = await openProbeChannel({ maxPending: 8, maxConnections: 16 });
    const silent: net.Socket[] = [];
    for (let i = 0; i < 12; i++) {
      const s = await connect(channel.address);
      s.on('error', () => undefined);
      silent.push(s);
    }
    await Promise.all(silent.slice(0, 4).map(closed)); // the four oldest made room
    const rank = await connect(channel.address);
    rank.write(hello(channel.token, 0) + step(1));
    await new Promise((r) => setTimeout(r, 100));
    rank.end();
    for (const s of silent) s.destroy();
    await channel.close();
    expect(channel.connections.map((c) => c.hello.rank)).toEqual([0]);
    expect(channel.problems).toContain('more than 8 connections at once had not shown the token: the oldest were closed');
  });

  // Finding C: a rank with the token could grow the collector without bound: clock probes whose replies it never
  // read, or messages the channel keeps (applied) sent under the rate limit.
  it('stops answering the clock probes of a rank that does not read them, and keeps no more than its budget', async () => {
    const channel = await openProbeChannel({ bytesPerSec: 1 << 30, maxRetainedBytes: 64 << 10 });
    const s = await connect(channel.address);
    s.pause(); // never reads the replies
    s.write(hello(channel.token, 0));
    const probes = Array.from({ length: 200_000 }, (_, i) => JSON.stringify({ type: 'clock', t0: i }) + '\n').join('');
    const applied = Array.from({ length: 5000 }, () => JSON.stringify({ type: 'applied', key: 'dataloader.num_workers', value: 2, where: 'train.py:10' }) + '\n').join('');
    s.write(probes + applied);
    // Until the channel has read past the budget (seconds on a busy machine), then the rank goes.
    for (let i = 0; i < 400 && !channel.problems.some((p) => p.includes('of messages to keep')); i++) await new Promise((r) => setTimeout(r, 50));
    s.destroy();
    await channel.close();
    const kept = channel.connections[0].messages;
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(1000); // 5,000 sent, ~90 bytes each: 64 KiB holds ~700
    expect(channel.problems).toEqual([
      expect.stringMatching(/^rank 0 \(127\.0\.0\.1:\d+\) did not read its clock replies: later probes were not answered$/),
      expect.stringMatching(/^the ranks sent more than 64 KiB of messages to keep \(rank 0 \(127\.0\.0\.1:\d+\) among them\): later ones were not kept$/),
    ]);
  });
});
