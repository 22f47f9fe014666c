import type { IncomingMessage, Server } from 'node:http';

import { WebSocketServer, type WebSocket } from 'ws';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ServerMessage } from '../api/wire';
import { RequestMessageSchema, TOKEN_QUERY_PARAM, WS_PATH } from '../api/wire';
import { toApiError } from '../core/api-router';
import type { Services } from '../core/services';
import { isAllowedOrigin, tokensEqual } from './auth';

export interface WsApiOptions {
  server: Server;
  services: Services;
  token: string;
  bindHost: string;
}

/** Why an upgrade request is refused, or null when it is accepted. */
export function refuseReason(req: IncomingMessage, token: string, bindHost: string): string | null {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== WS_PATH) return 'unknown path';
  if (!tokensEqual(token, url.searchParams.get(TOKEN_QUERY_PARAM))) return 'missing or wrong token';
  if (!isAllowedOrigin(req.headers.origin, req.headers.host, bindHost)) return 'origin not allowed';
  return null;
}

/** The WebSocket transport: requests are validated and dispatched, events are pushed. */
export function attachWsApi({ server, services, token, bindHost }: WsApiOptions): WebSocketServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });

  server.on('upgrade', (req, socket, head) => {
    const reason = refuseReason(req, token, bindHost);
    if (reason) {
      socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${reason}\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });

  wss.on('connection', (ws: WebSocket) => {
    const send = (msg: ServerMessage) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    const unsubscribe = services.events.subscribe((event, data) => send({ type: 'event', event, data }));
    ws.on('close', unsubscribe);
    send({ type: 'event', event: 'engine.status', data: services.engine.status() });

    ws.on('message', (raw) => {
      let json: unknown;
      try {
        json = JSON.parse(raw.toString());
      } catch {
        send({ type: 'response', id: 0, ok: false, error: { code: 'E_BAD_REQUEST', message: 'message is not JSON' } });
        return;
      }
      const parsed = RequestMessageSchema.safeParse(json);
      if (!parsed.success) {
        const id = typeof (json as { id?: unknown })?.id === 'number' ? (json as { id: number }).id : 0;
        const message = `bad request message: ${formatIssues(parsed.error, 'message')}`;
        send({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', message).toPayload() });
        return;
      }
      const { id, method, params } = parsed.data;
      services.router.dispatch(method, params).then(
        (result) => send({ type: 'response', id, ok: true, result }),
        (err: unknown) => send({ type: 'response', id, ok: false, error: toApiError(err).toPayload() }),
      );
    });
  });
  return wss;
}
