import type { CallOutcome } from '@api/bridge';
import type { ServerMessage } from '@api/wire';
import { PAGE_CALLS_IN_FLIGHT, ServerMessageSchema, TOKEN_QUERY_PARAM, WS_PATH } from '@api/wire';

import type { Transport, TransportState } from './transport';
import { listenerSet } from './transport';

export interface WsTransportOptions {
  url: string;
  /** How long a call waits for a connection before failing with E_DISCONNECTED. */
  connectWaitMs?: number;
  reconnectDelaysMs?: number[];
  /**
   * Whether the server takes this tab's token: true, false, or null when it could not be asked. Asked when the
   * WebSocket is refused before it opens; on false the transport stops trying and says why (`refusedNotice`).
   */
  checkToken?: () => Promise<boolean | null>;
  refusedNotice?: string;
}

interface PendingCall {
  resolve(outcome: CallOutcome): void;
}

const disconnected = (message: string): CallOutcome => ({ ok: false, error: { code: 'E_DISCONNECTED', message } });

/** Serve mode: one WebSocket, reconnected with back-off; calls in flight fail with E_DISCONNECTED on a drop. */
export function createWsTransport(options: WsTransportOptions): Transport {
  const delays = options.reconnectDelaysMs ?? [250, 500, 1000, 2000, 5000];
  const connectWaitMs = options.connectWaitMs ?? 10_000;
  const stateListeners = listenerSet<[TransportState]>();
  const eventListeners = listenerSet<[string, unknown]>();
  const pending = new Map<number, PendingCall>();
  const waiters = new Set<() => void>();
  // Calls past PAGE_CALLS_IN_FLIGHT wait here for one on the wire to be answered, in the order made.
  const queued: (() => void)[] = [];
  let onWire = 0;
  const turn = (): Promise<void> => (onWire < PAGE_CALLS_IN_FLIGHT ? ((onWire += 1), Promise.resolve()) : new Promise((resolve) => queued.push(resolve)));
  const done = () => {
    const next = queued.shift();
    if (next) next();
    else onWire -= 1;
  };
  let state: TransportState = 'connecting';
  let socket: WebSocket | null = null;
  let attempt = 0;
  let nextId = 1;
  let closed = false;
  let notice: string | null = null;
  /** Refusals in a row before the socket opened: the token is asked about at the first and every fifth. */
  let refusals = 0;

  const setState = (next: TransportState) => {
    if (state === next) return;
    state = next;
    stateListeners.emit(next);
  };

  const onMessage = (raw: string) => {
    let msg: ServerMessage;
    try {
      msg = ServerMessageSchema.parse(JSON.parse(raw));
    } catch {
      return; // a server that speaks another protocol version; nothing sensible to do with it
    }
    if (msg.type === 'event') {
      eventListeners.emit(msg.event, msg.data);
      return;
    }
    const call = pending.get(msg.id);
    if (!call) return;
    pending.delete(msg.id);
    call.resolve(msg.ok ? { ok: true, result: msg.result } : { ok: false, error: msg.error });
  };

  const connect = () => {
    if (closed) return;
    const ws = new WebSocket(options.url);
    socket = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      refusals = 0;
      attempt = 0;
      setState('connected');
      for (const wake of waiters) wake();
      waiters.clear();
    };
    ws.onmessage = (e) => onMessage(String(e.data));
    ws.onclose = () => {
      if (socket !== ws) return;
      socket = null;
      for (const call of pending.values()) call.resolve(disconnected('the connection to Trainbench was lost'));
      pending.clear();
      if (closed) return;
      setState('reconnecting');
      if (!opened && options.checkToken && refusals++ % 5 === 0) void askToken(options.checkToken);
      const delay = delays[Math.min(attempt, delays.length - 1)];
      attempt += 1;
      setTimeout(connect, delay);
    };
  };

  /** A token the server refuses will not do on any retry: stop, and say so, instead of reconnecting for ever. */
  const askToken = async (check: () => Promise<boolean | null>) => {
    if ((await check()) !== false || closed || state === 'connected') return;
    notice = options.refusedNotice ?? "the server refuses this tab's token";
    stop();
  };

  const stop = () => {
    closed = true;
    setState('closed');
    socket?.close();
    for (const wake of waiters) wake(); // calls waiting for a connection fail now, with the notice
    waiters.clear();
  };

  const waitConnected = (): Promise<boolean> => {
    if (state === 'connected') return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        resolve(false);
      }, connectWaitMs);
      waiters.add(wake);
    });
  };

  connect();

  return {
    kind: 'websocket',
    state: () => state,
    onState: stateListeners.add,
    onEvent: eventListeners.add,
    async call(method, params) {
      await turn();
      if (!(await waitConnected()) || !socket) {
        done();
        // The notice says the whole of it above the page; a call's error only points at it.
        return disconnected(notice !== null ? "the server refuses this tab's token (see above)" : `not connected to Trainbench (waited ${connectWaitMs / 1000} s)`);
      }
      const id = nextId++;
      const sent = socket;
      return new Promise<CallOutcome>((resolve) => {
        pending.set(id, {
          resolve: (outcome) => {
            done();
            resolve(outcome);
          },
        });
        sent.send(JSON.stringify({ type: 'request', id, method, params }));
      });
    },
    notice: () => notice,
    close: stop,
  };
}

/**
 * The token arrives in the page URL; keep it for reloads in sessionStorage and
 * take it out of the address bar so it does not end up in screenshots or history.
 */
export function takeServeToken(location: Location, history: History, storage: Storage): string | null {
  const params = new URLSearchParams(location.search);
  const fromUrl = params.get(TOKEN_QUERY_PARAM);
  if (fromUrl) {
    storage.setItem('trainbench.token', fromUrl);
    params.delete(TOKEN_QUERY_PARAM);
    const query = params.toString();
    history.replaceState(history.state, '', `${location.pathname}${query ? `?${query}` : ''}${location.hash}`);
    return fromUrl;
  }
  return storage.getItem('trainbench.token');
}

export function serveSocketUrl(location: Location, token: string): string {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  return `${scheme}://${location.host}${WS_PATH}?${TOKEN_QUERY_PARAM}=${encodeURIComponent(token)}`;
}
