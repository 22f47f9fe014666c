import { randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';

import { ApiError } from '../../api/errors';
import { wallClock } from '../common/wall-clock';

import type { ProbeHello, ProbeMessage } from './probe-messages';
import { ProbeHelloSchema, ProbeMessageSchema } from './probe-messages';

/** A probe line longer than this is not ours (the probe's longest is a few KiB): the connection is dropped. */
const MAX_LINE_BYTES = 1 << 20;
/** Ranks at most, by default: a job of more is refused connection by connection, and said once. */
export const DEFAULT_MAX_CONNECTIONS = 4096;
/**
 * What one connection may send, by default: this many bytes a second on average, in bursts of four seconds' worth.
 * A rank's probe sends a few KiB per step in batches; a sender over it has its lines dropped (counted, named once).
 */
export const DEFAULT_BYTES_PER_SEC = 8 << 20;
/** Bad senders named, at most: a flood of them cannot grow the list. */
const MAX_PROBLEMS = 32;
/**
 * Before its hello a connection is nobody's: it has this long to show the token, in a line this short, and at most
 * this many wait at once (the oldest is closed for a newcomer). A flood of silent or fat connections without the
 * token can then neither grow the collector's memory nor keep the job's ranks out.
 */
const HELLO_MS = 5000;
const MAX_HELLO_BYTES = 4096;
export const MAX_PENDING_CONNECTIONS = 64;
/**
 * What the channel keeps of all its ranks' messages, at most, in characters of their lines (a rank with the token,
 * flooding, cannot grow it further); held as objects they take up to 4x that in memory.
 */
export const MAX_RETAINED_BYTES = 64 << 20;
/** What one kept collective counts for in that budget: ~2.5x its line (an aggregated one cost ~9x; round 7). */
const COLLECTIVE_ITEM_BYTES = 128;
/** Clock replies a rank has not read, at most: beyond, its probes go unanswered (a rank reads each reply at once). */
const MAX_UNREAD_REPLY_BYTES = 64 << 10;
/** The collector's clock in ms, with sub-millisecond resolution (what a rank's clock probe is answered with). */
const now = wallClock();

/** What one connected process (a rank) said, in arrival order. */
export interface ProbeConnection {
  hello: ProbeHello;
  messages: ProbeMessage[];
}

export interface ProbeChannel {
  /** host:port for TB_PROBE_ADDR. */
  address: string;
  /** Random per launch, for TB_PROBE_TOKEN: a process that cannot show it is not heard. */
  token: string;
  connections: ProbeConnection[];
  /** Lines dropped: malformed, unknown, over a connection's rate, or from a connection without the token. */
  rejected: number;
  /** Who sent what was refused (a wrong token, a flood, an oversized line, a connection over the limit), each named once. */
  problems: string[];
  /** Called for every accepted message (live progress). */
  onMessage: ((connection: ProbeConnection, message: ProbeMessage) => void) | null;
  /** Resolves once every connection has ended (after the processes exit); then closes the server. */
  close(): Promise<void>;
}

const sameToken = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export interface ProbeChannelOptions {
  /**
   * Where to listen: 127.0.0.1 (the default) for ranks on this machine; an address of this machine the other nodes
   * reach for a job across machines (issue 40). The token is asked of every connection either way.
   */
  host?: string;
  /** The port to listen on; 0 (the default): a free one. A job across machines may need one its firewall lets through. */
  port?: number;
  maxConnections?: number;
  bytesPerSec?: number;
  /** Connections waiting to show the token, at most (MAX_PENDING_CONNECTIONS); tests make it small. */
  maxPending?: number;
  /** Bytes of messages kept over all ranks, at most (MAX_RETAINED_BYTES); tests make it small. */
  maxRetainedBytes?: number;
  /**
   * 'all' (the default) keeps every message in `connections`; 'last' keeps only each
   * connection's latest step and no phases or losses (onMessage still sees them all),
   * so a training run of millions of steps holds bounded memory.
   */
  retainSteps?: 'all' | 'last';
}

const PER_STEP: ReadonlySet<ProbeMessage['type']> = new Set(['step', 'phases', 'loss', 'collectives']);

/**
 * Listens (on 127.0.0.1 unless `host` says otherwise, a free port) for the probe's JSON lines, one connection per
 * training process. Bounded: connections, bytes a second per connection, line length; a wrong token, a flood or an
 * oversized line costs its sender, never the channel, and is named in `problems`. A rank's clock probe is answered.
 */
export async function openProbeChannel(options: ProbeChannelOptions = {}): Promise<ProbeChannel> {
  const token = randomBytes(16).toString('hex');
  const sockets = new Set<net.Socket>();
  const ended: Promise<void>[] = [];
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const rate = options.bytesPerSec ?? DEFAULT_BYTES_PER_SEC;
  const maxPending = options.maxPending ?? MAX_PENDING_CONNECTIONS;
  const maxRetained = options.maxRetainedBytes ?? MAX_RETAINED_BYTES;
  const said = new Set<string>();
  const channel: ProbeChannel = {
    address: '',
    token,
    connections: [],
    rejected: 0,
    problems: [],
    onMessage: null,
    close: async () => {
      // Give sockets a moment to flush what a process wrote just before it exited, then cut the rest.
      const all = Promise.all(ended);
      const timer = new Promise<void>((resolve) => setTimeout(resolve, 2000).unref());
      await Promise.race([all, timer]);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  /** Names a bad sender once (by its rank once it said hello, else by its address). */
  const problem = (key: string, text: string) => {
    if (said.has(key) || channel.problems.length >= MAX_PROBLEMS) return;
    said.add(key);
    channel.problems.push(text);
  };
  // Connections that have not shown the token yet, oldest first.
  const pending = new Set<net.Socket>();
  let retained = 0;
  const heardRanks = new Set<number>();
  const server = net.createServer((socket) => {
    const who = `${socket.remoteAddress ?? 'an unknown address'}:${socket.remotePort ?? '?'}`;
    if (pending.size >= maxPending) {
      const oldest = pending.values().next().value!;
      channel.rejected++;
      problem('pending', `more than ${maxPending} connections at once had not shown the token: the oldest were closed`);
      oldest.destroy();
    }
    if (sockets.size >= maxConnections) {
      channel.rejected++;
      problem('connections', `more than ${maxConnections} connections: ${who} and later ones were refused`);
      socket.destroy();
      return;
    }
    sockets.add(socket);
    pending.add(socket);
    const helloTimer = setTimeout(() => {
      channel.rejected++;
      problem(`silent ${socket.remoteAddress}`, `${who} did not show this job's token within ${HELLO_MS / 1000} s: it was closed`);
      socket.destroy();
    }, HELLO_MS);
    helloTimer.unref();
    ended.push(new Promise<void>((resolve) => socket.on('close', () => resolve())));
    let connection: ProbeConnection | null = null;
    let lastStepAt = -1;
    let buffered = '';
    let skipping = false;
    // Token bucket of bytes: `rate` a second, up to four seconds' worth at once.
    let allowance = 4 * rate;
    let filledAt = Date.now();
    const name = () => (connection ? `rank ${connection.hello.rank} (${who})` : who);
    socket.setEncoding('utf8');
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      clearTimeout(helloTimer);
      sockets.delete(socket);
      pending.delete(socket);
    });
    socket.on('data', (chunk: string) => {
      const t = Date.now();
      allowance = Math.min(4 * rate, allowance + ((t - filledAt) / 1000) * rate);
      filledAt = t;
      allowance -= Buffer.byteLength(chunk);
      if (allowance < 0) {
        // Over its rate: what it sends is dropped until its allowance is back (lines are cut, so skip to the next).
        channel.rejected++;
        problem(`rate ${who}`, `${name()} sent more than ${rate >= 2 ** 20 ? `${(rate / 2 ** 20).toFixed(0)} MiB` : `${(rate / 2 ** 10).toFixed(0)} KiB`}/s: its lines over that were dropped`);
        buffered = '';
        skipping = true;
        return;
      }
      if (skipping) {
        // The line a dropped chunk cut is dropped whole: what follows starts after its end.
        const nl = chunk.indexOf('\n');
        if (nl < 0) return;
        chunk = chunk.slice(nl + 1);
        skipping = false;
      }
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        let raw: unknown;
        try {
          raw = JSON.parse(line);
        } catch {
          channel.rejected++;
          if (connection !== null) continue;
          // Its first line is its hello: a connection that starts with anything else is not a rank.
          problem(`token ${socket.remoteAddress}`, `${who} did not show this job's token: it was not heard`);
          socket.destroy();
          return;
        }
        if (connection === null) {
          const hello = line.length <= MAX_HELLO_BYTES ? ProbeHelloSchema.safeParse(raw) : null;
          if (!hello?.success || !sameToken(hello.data.token, token)) {
            channel.rejected++;
            problem(`token ${socket.remoteAddress}`, `${who} did not show this job's token: it was not heard`);
            socket.destroy();
            return;
          }
          // A rank says hello once, and a launch hears at most maxConnections of them: a token holder that connects
          // again and again (a rank, or any node given the join code) cannot pile up connections kept for the result.
          // Each hello is kept, so it counts against the retained budget too.
          const refused: [string, string] | null = heardRanks.has(hello.data.rank)
            ? ['hello again', `rank ${hello.data.rank} said hello a second time (${who})`]
            : channel.connections.length >= maxConnections
              ? ['hello count', `more than ${maxConnections} ranks said hello (${who} among them)`]
              : retained + line.length > maxRetained
                ? ['retained', `the ranks sent more than ${maxRetained >> 10} KiB to keep (${who} among them)`]
                : null;
          if (refused) {
            channel.rejected++;
            problem(refused[0], `${refused[1]}: its connection was closed`);
            socket.destroy();
            return;
          }
          retained += line.length;
          heardRanks.add(hello.data.rank);
          connection = { hello: hello.data, messages: [] };
          channel.connections.push(connection);
          clearTimeout(helloTimer);
          pending.delete(socket);
          continue;
        }
        const message = ProbeMessageSchema.safeParse(raw);
        if (!message.success) {
          channel.rejected++;
          continue;
        }
        const m = message.data;
        if (m.type === 'clock') {
          // NTP-style: the rank's send time back with ours on receipt and on reply; never kept.
          const t1 = now();
          // A rank reads each reply before its next probe: one that does not gets no more, rather than a growing buffer here.
          if (socket.writableLength <= MAX_UNREAD_REPLY_BYTES) socket.write(JSON.stringify({ type: 'clock', t0: m.t0, t1, t2: now() }) + '\n');
          else {
            channel.rejected++;
            problem(`unread ${who}`, `${name()} did not read its clock replies: later probes were not answered`);
          }
          continue;
        }
        const keep = options.retainSteps !== 'last' || !PER_STEP.has(m.type);
        if (m.type === 'step' && !keep && lastStepAt >= 0) connection.messages[lastStepAt] = m;
        else if (keep || m.type === 'step') {
          // Kept within the channel's budget (the line's length stands for the message's size); what is over it is
          // still seen live, not kept, and said once.
          // A collective kept costs the aggregation far more than its ~50 characters of JSON (objects, maps over
          // steps and ranks): each counts as COLLECTIVE_ITEM_BYTES, so the budget bounds what the verdicts hold too.
          retained += m.type === 'collectives' ? Math.max(line.length, m.items.length * COLLECTIVE_ITEM_BYTES) : line.length;
          if (retained <= maxRetained) {
            const at = connection.messages.push(m) - 1;
            if (!keep) lastStepAt = at;
          } else {
            channel.rejected++;
            problem('retained', `the ranks sent more than ${maxRetained >= 1 << 20 ? `${maxRetained >> 20} MiB` : `${maxRetained >> 10} KiB`} of messages to keep (${name()} among them): later ones were not kept`);
          }
        }
        channel.onMessage?.(connection, m);
      }
      if (connection === null && buffered.length > MAX_HELLO_BYTES) {
        channel.rejected++;
        problem(`token ${socket.remoteAddress}`, `${who} did not show this job's token: it was not heard`);
        socket.destroy();
        return;
      }
      if (buffered.length > MAX_LINE_BYTES) {
        channel.rejected++;
        problem(`line ${who}`, `${name()} sent a line over ${MAX_LINE_BYTES >> 20} MiB: its connection was closed`);
        socket.destroy();
      }
    });
  });
  server.maxConnections = maxConnections + 16;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  channel.address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  return channel;
}

// The join code. A job across machines (issue 40): the ranks on the other nodes need the collector's address and
// the launch's token, warm-up, steps and overrides. They travel as one join code, which `trainbench join CODE --
// command` on each other node turns back into the probe's variables. A benchmark or a wizard sends them for every
// launch to the nodes that follow it (core/nodes/followers.ts); a code of one launch runs that launch alone.
const PREFIX = 'tbj1.';
/** The probe's variables a join code may carry: nothing else reaches the other node's environment. */
const KEYS = ['TB_PROBE_ADDR', 'TB_PROBE_TOKEN', 'TB_PROBE_WARMUP', 'TB_PROBE_STEPS', 'TB_PROBE_SET', 'TB_PROBE_SEED', 'TB_PROBE_PEAK', 'TB_PROBE_COLLECTIVES'] as const;
/** A code is a few hundred characters; overrides make it longer, never this long. */
const MAX_CODE_CHARS = 16_384;

export function encodeJoin(env: Readonly<Record<string, string>>): string {
  const carried = Object.fromEntries(KEYS.filter((k) => env[k] !== undefined).map((k) => [k, env[k]]));
  return PREFIX + Buffer.from(JSON.stringify(carried)).toString('base64url');
}

/** The probe's variables from a join code; a code that is not one is an error naming what is wrong with it. */
export function decodeJoin(code: string): Record<string, string> {
  const bad = (why: string) => new ApiError('E_BAD_INPUT', `${JSON.stringify(code.slice(0, 40))}${code.length > 40 ? '…' : ''} is not a join code: ${why} (benchmark-training or optimise with --collector prints the code to use)`);
  if (code.length > MAX_CODE_CHARS) throw bad(`it is ${code.length} characters long, more than ${MAX_CODE_CHARS}`);
  if (!code.startsWith(PREFIX)) throw bad(`it does not start with tbf1. (or ${PREFIX} for one launch)`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(code.slice(PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw bad('its body does not decode');
  }
  return probeEnvOf(parsed, bad);
}

/** The probe's variables a launch carries to another node: its keys only, plain strings, an address and a token. */
export function probeEnvOf(parsed: unknown, bad: (why: string) => Error): Record<string, string> {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw bad('its body is not an object');
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (!(KEYS as readonly string[]).includes(k)) throw bad(`it names ${JSON.stringify(k.slice(0, 40))}, not one of the probe's variables`);
    if (typeof v !== 'string' || v.includes('\0')) throw bad(`its ${k} is not a plain string`);
    env[k] = v;
  }
  if (!env.TB_PROBE_ADDR || !env.TB_PROBE_TOKEN) throw bad('it has no collector address or token');
  return env;
}
