import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** What the guard knows of one open connection. */
interface Connection {
  /** It has shown the serve token (in the page's URL or a header): a window of ours, not just anyone. */
  trusted: boolean;
  /** Closes it when it has begun nothing within the headers limit; null once it has. */
  silentTimer: ReturnType<typeof setTimeout> | null;
}

/**
 * How long a connection that has asked nothing yet is passed over while a stranger's request is still being answered:
 * a page load's new connection is read within moments, and chosen first it was the one a stream of strangers who
 * never read their answers evicted (1 page load in 4; re-attack 19).
 */
export const NEW_CONNECTION_GRACE_MS = 1_000;

/**
 * Keeps the server's connections under `max` without locking a person out. Node's headers limit starts with a
 * request's first byte: a connection that sends nothing at all would stay open for ever, so one that begins no
 * request (or WebSocket upgrade) within `limitMs` is closed here.
 *
 * At `max` open, a new connection takes the place of another rather than being refused. Whom it replaces is
 * decided by what each is doing now, not by whether it ever began a request (re-attack 16: 512 connections that each
 * asked for a small file every 3 s on keep-alive kept every page load out): first a WebSocket upgrade without the
 * token, which the API has refused and closes within a second anyway; then the one idle longest between requests
 * among those that never showed the token, unless it has been idle under NEW_CONNECTION_GRACE_MS; then the one of
 * those whose request has run longest (a response it does not read); then a young idle one; then the one idle
 * longest among the token's. Only when every open connection is a window of ours at
 * work (or a WebSocket with the token, which the API caps itself) is the new one closed.
 */
export function guardConnections(server: Server, limitMs: number, max: number, shownToken: (req: IncomingMessage) => boolean): void {
  const all = new Map<Duplex, Connection>();
  // Insertion order is age in each: the first is the one idle (or working) longest. Idle strangers keep since when.
  const refusedUpgrades = new Set<Duplex>();
  const idleStrangers = new Map<Duplex, number>();
  const busyStrangers = new Set<Duplex>();
  const idleOurs = new Set<Duplex>();
  const settle = (socket: Duplex) => {
    refusedUpgrades.delete(socket);
    idleStrangers.delete(socket);
    busyStrangers.delete(socket);
    idleOurs.delete(socket);
  };
  const quiet = (c: Connection) => {
    if (c.silentTimer) clearTimeout(c.silentTimer);
    c.silentTimer = null;
  };
  const victim = (): Duplex | undefined => {
    const refused = refusedUpgrades.values().next().value;
    if (refused) return refused;
    const [idle, since] = idleStrangers.entries().next().value ?? [undefined, 0];
    if (idle && Date.now() - since >= NEW_CONNECTION_GRACE_MS) return idle;
    return busyStrangers.values().next().value ?? idle ?? idleOurs.values().next().value;
  };

  server.on('connection', (socket: Duplex) => {
    if (all.size >= max) {
      const gives = victim();
      if (gives === undefined) {
        socket.destroy();
        return;
      }
      gives.destroy();
      forget(gives);
    }
    const timer = setTimeout(() => socket.destroy(), limitMs);
    timer.unref();
    all.set(socket, { trusted: false, silentTimer: timer });
    idleStrangers.set(socket, Date.now());
    socket.once('close', () => forget(socket));
  });

  function forget(socket: Duplex) {
    const c = all.get(socket);
    if (!c) return;
    quiet(c);
    settle(socket);
    all.delete(socket);
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const c = all.get(socket);
    if (!c) return;
    quiet(c);
    if (!c.trusted && shownToken(req)) c.trusted = true;
    settle(socket);
    if (!c.trusted) busyStrangers.add(socket);
    // Idle again once answered, at the back of its line (keep-alive waits for the next request).
    res.once('close', () => {
      if (!all.has(socket) || socket.destroyed) return;
      settle(socket);
      if (c.trusted) idleOurs.add(socket);
      else idleStrangers.set(socket, Date.now());
    });
  });

  // A WebSocket with the token is the API's to cap (its clients): never taken for a new connection here. One without
  // it is refused by the API, its answer written, and is the first to give way: kept with the strangers at work, a
  // stream of them left a page load's new connection the only idle stranger to evict (1 load in 4; re-attack 18).
  server.on('upgrade', (req: IncomingMessage) => {
    const socket = req.socket;
    const c = all.get(socket);
    if (!c) return;
    quiet(c);
    settle(socket);
    if (shownToken(req)) c.trusted = true;
    else refusedUpgrades.add(socket);
  });
}
