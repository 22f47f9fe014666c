// A job across machines (issue 40): the other nodes follow every launch of a benchmark or a wizard. The node that
// measures opens this hub once for the whole job and prints one follow code (its address and a random token);
// `trainbench join CODE -- command` on each other node connects, and at each launch is sent the probe's variables
// for it (a new collector token, the overrides of the trial), runs its part of the job with them, and ends it when
// the launch ends here. A wizard's dozens of launches then need the other nodes' command typed once.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';

import { ApiError } from '../../api/errors';
import { printable } from '../../api/shell-word';

const PREFIX = 'tbf1.';
/** Nodes that may follow one job: a connection beyond it is closed. */
const MAX_FOLLOWERS = 256;
/** Connections at most that have not said their hello yet. */
const MAX_PENDING = 64;
/** A follower says who it is within this, or is closed. */
const HELLO_MS = 10_000;
/** Its hello is one short line, and so is each thing it says after it (its part of a launch ended); a longer line closes it. */
const MAX_HELLO_BYTES = 4096;
/** A code is an address and a token: a few dozen characters. */
const MAX_CODE_CHARS = 1024;
/**
 * Bytes a second a connection may send, a second's worth at once: a node says one short line a launch, so this is
 * far above its need, and a flood of short lines (each parsed) is read no faster than this: the socket is paused
 * until its allowance is back, so the sender is slowed by TCP, nothing it said is lost and the event loop stays free.
 */
const BYTES_PER_SEC = 64 << 10;

export interface Followers {
  /** What `trainbench join` takes on the other nodes. */
  code: string;
  /** A launch starts here: every node starts its part with these variables (and a node that joins later, too). */
  launch(env: Readonly<Record<string, string>>): void;
  /** The launch ended here: the nodes end their part of it. */
  stop(): void;
  /** The job ended: the nodes end, and the hub closes. */
  close(): Promise<void>;
  /**
   * Calls `listener` when another node's part of the launch running here ends in failure ("node b's part exited
   * with code 134"): the job cannot finish without it, and this node's torchrun may wait minutes to notice.
   */
  onPartFailed(listener: (what: string) => void): () => void;
}

export function encodeFollow(address: string, token: string): string {
  return PREFIX + Buffer.from(JSON.stringify({ address, token })).toString('base64url');
}

export const isFollowCode = (code: string) => code.startsWith(PREFIX);

/** The hub's address and token from a follow code; a code that is not one is an error naming what is wrong. */
export function decodeFollow(code: string): { host: string; port: number; token: string } {
  const bad = (why: string) => new ApiError('E_BAD_INPUT', `${JSON.stringify(code.slice(0, 40))}${code.length > 40 ? '…' : ''} is not a join code: ${why} (benchmark-training or optimise with --collector prints the code to use)`);
  if (code.length > MAX_CODE_CHARS) throw bad(`it is ${code.length} characters long, more than ${MAX_CODE_CHARS}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(code.slice(PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw bad('its body does not decode');
  }
  const { address, token } = (parsed ?? {}) as { address?: unknown; token?: unknown };
  if (typeof token !== 'string' || !/^[0-9a-f]{64}$/.test(token)) throw bad('it has no token');
  const m = typeof address === 'string' ? /^\[?([\w.:-]+?)\]?:(\d{1,5})$/.exec(address) : null;
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw bad('it has no address host:port');
  return { host: m[1], port: Number(m[2]), token };
}

/** The hub, listening on `host` (the collector's address, one the other nodes reach) on a port the kernel picks. */
export async function openFollowers(host: string, options: { bytesPerSec?: number } = {}): Promise<Followers> {
  const rate = options.bytesPerSec ?? BYTES_PER_SEC;
  const token = randomBytes(32).toString('hex');
  const expected = Buffer.from(JSON.stringify({ type: 'follow', token }));
  const nodes = new Set<net.Socket>();
  const sockets = new Set<net.Socket>();
  let current: string | null = null;
  let launches = 0;
  const failed = new Set<(what: string) => void>();
  /** A followed node's line: only "my part of launch n ended" counts, and only a failure of the launch running here. */
  const heard = (name: string, line: Buffer) => {
    let m: unknown;
    try {
      m = JSON.parse(line.toString('utf8'));
    } catch {
      return;
    }
    const { type, n, code } = (m ?? {}) as { type?: unknown; n?: unknown; code?: unknown };
    if (type !== 'exited' || n !== launches || current === null || typeof code !== 'number' || code === 0) return;
    const what = `node ${name}'s part of the job exited with code ${code}${code > 128 && code < 160 ? ` (signal ${code - 128})` : ''}`;
    for (const l of failed) l(what);
  };
  const send = (socket: net.Socket, message: object) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
  };
  // Connections that have not said their hello, oldest first: the oldest makes room for a newcomer, so silent
  // connections without the token cannot keep a real node out.
  const pending = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    if (nodes.size >= MAX_FOLLOWERS) return socket.destroy();
    if (pending.size >= MAX_PENDING) pending.values().next().value!.destroy();
    sockets.add(socket);
    pending.add(socket);
    socket.setNoDelay(true);
    let buffered = Buffer.alloc(0);
    let followed = false;
    let name = printable(`${socket.remoteAddress ?? '?'}`);
    const timer = setTimeout(() => socket.destroy(), HELLO_MS);
    let allowance = rate;
    let filledAt = Date.now();
    let paused: NodeJS.Timeout | null = null;
    /** Takes `bytes` from the connection's allowance; past it, reads nothing more until it is back. */
    const spend = (bytes: number) => {
      const now = Date.now();
      allowance = Math.min(rate, allowance + ((now - filledAt) / 1000) * rate) - bytes;
      filledAt = now;
      if (allowance >= 0 || paused !== null) return;
      socket.pause();
      paused = setTimeout(() => {
        paused = null;
        socket.resume();
      }, Math.ceil((-allowance / rate) * 1000));
    };
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      if (paused !== null) clearTimeout(paused);
      nodes.delete(socket);
      sockets.delete(socket);
      pending.delete(socket);
    });
    /** The first line: a node given the code follows from here; anything else closes the connection (false). */
    const admit = (line: Buffer): boolean => {
      // Compared whole and in constant time: only a node given the code follows, whatever else it sends (null, a
      // number or an array as well as a wrong token: nothing from a connection may throw here).
      let said: unknown;
      try {
        said = JSON.parse(line.toString('utf8'));
      } catch {
        return false;
      }
      if (typeof said !== 'object' || said === null) return false;
      const { type, token: shown, node } = said as { type?: unknown; token?: unknown; node?: unknown };
      const got = Buffer.from(JSON.stringify({ type, token: shown }));
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) return false;
      clearTimeout(timer);
      pending.delete(socket);
      followed = true;
      if (typeof node === 'string' && node) name = printable(node.slice(0, 255));
      nodes.add(socket);
      if (current !== null) socket.write(current); // joined while a launch runs: it starts its part now
      return true;
    };
    socket.on('data', (chunk: Buffer) => {
      spend(chunk.length);
      buffered = Buffer.concat([buffered, chunk]);
      let nl: number;
      while ((nl = buffered.indexOf(10)) >= 0) {
        const line = buffered.subarray(0, nl);
        buffered = buffered.subarray(nl + 1);
        if (followed) heard(name, line);
        else if (!admit(line)) return socket.destroy();
      }
      if (buffered.length > MAX_HELLO_BYTES) socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    code: encodeFollow(address, token),
    launch(env) {
      current = `${JSON.stringify({ type: 'launch', n: ++launches, env })}\n`;
      for (const s of nodes) s.write(current);
    },
    stop() {
      if (current === null) return;
      current = null;
      for (const s of nodes) send(s, { type: 'stop', n: launches });
    },
    async close() {
      current = null;
      for (const s of nodes) {
        send(s, { type: 'done' });
        s.end();
      }
      // The nodes close their side when told; one that does not is cut after a grace.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      for (const s of sockets) s.destroy();
      await closed;
    },
    onPartFailed(listener) {
      failed.add(listener);
      return () => failed.delete(listener);
    },
  };
}

/**
 * A job's hub for its other nodes: opened at its first launch (none without a collector), its code said then, and
 * closed at the job's end, which ends the nodes' `trainbench join`.
 */
export function otherNodes(collector: { host: string } | undefined, onJoin?: (code: string) => void) {
  let hub: Promise<Followers> | null = null;
  return {
    open(): Promise<Followers | undefined> {
      if (!collector) return Promise.resolve(undefined);
      hub ??= openFollowers(collector.host).then(
        (f) => {
          onJoin?.(f.code);
          return f;
        },
        (err: Error) => {
          throw new ApiError('E_BAD_INPUT', `cannot listen on ${collector.host} for the other nodes of the job: ${err.message}`);
        },
      );
      return hub;
    },
    close(): void {
      void hub?.then((f) => f.close()).catch(() => undefined);
      hub = null;
    },
  };
}
