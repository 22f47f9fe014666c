import { randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';

import type { ProbeHello, ProbeMessage } from './probe-messages';
import { ProbeHelloSchema, ProbeMessageSchema } from './probe-messages';

/** A probe line longer than this is not ours (the probe's longest is a few KiB): the connection is dropped. */
const MAX_LINE_BYTES = 1 << 20;

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
  /** Lines dropped: malformed, unknown or from a connection without the token. */
  rejected: number;
  /** Called for every accepted message (live progress). */
  onMessage: ((connection: ProbeConnection, message: ProbeMessage) => void) | null;
  /** Resolves once every connection has ended (after the processes exit); then closes the server. */
  close(): Promise<void>;
}

const sameToken = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export interface ProbeChannelOptions {
  /**
   * 'all' (the default) keeps every message in `connections`; 'last' keeps only each
   * connection's latest step and no phases or losses (onMessage still sees them all),
   * so a training run of millions of steps holds bounded memory.
   */
  retainSteps?: 'all' | 'last';
}

const PER_STEP: ReadonlySet<ProbeMessage['type']> = new Set(['step', 'phases', 'loss']);

/** Listens on 127.0.0.1 (a free port) for the probe's JSON lines, one connection per training process. */
export async function openProbeChannel(options: ProbeChannelOptions = {}): Promise<ProbeChannel> {
  const token = randomBytes(16).toString('hex');
  const sockets = new Set<net.Socket>();
  const ended: Promise<void>[] = [];
  const channel: ProbeChannel = {
    address: '',
    token,
    connections: [],
    rejected: 0,
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
  const server = net.createServer((socket) => {
    sockets.add(socket);
    ended.push(new Promise<void>((resolve) => socket.on('close', () => resolve())));
    let connection: ProbeConnection | null = null;
    let lastStepAt = -1;
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('error', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk: string) => {
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
          continue;
        }
        if (connection === null) {
          const hello = ProbeHelloSchema.safeParse(raw);
          if (!hello.success || !sameToken(hello.data.token, token)) {
            channel.rejected++;
            socket.destroy();
            return;
          }
          connection = { hello: hello.data, messages: [] };
          channel.connections.push(connection);
          continue;
        }
        const message = ProbeMessageSchema.safeParse(raw);
        if (!message.success) {
          channel.rejected++;
          continue;
        }
        const m = message.data;
        if (options.retainSteps !== 'last' || !PER_STEP.has(m.type)) connection.messages.push(m);
        else if (m.type === 'step' && lastStepAt >= 0) connection.messages[lastStepAt] = m;
        else if (m.type === 'step') lastStepAt = connection.messages.push(m) - 1;
        channel.onMessage?.(connection, m);
      }
      if (buffered.length > MAX_LINE_BYTES) {
        channel.rejected++;
        socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  channel.address = `127.0.0.1:${port}`;
  return channel;
}
