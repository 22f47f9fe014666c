import type { IncomingMessage, ServerResponse } from 'node:http';

import { TOKEN_CHECK_PATH } from '../api/wire';
import { headerToken, tokensEqual } from './auth';
import { splitTarget } from './ws-api';

export function isTokenCheckTarget(target: string | undefined): boolean {
  return splitTarget(target).pathname === TOKEN_CHECK_PATH;
}

/**
 * GET /api/token, the token in the x-trainbench-token header: 204 when it is this server's, 401 when not. A tab
 * whose WebSocket keeps being refused asks, so that a stale token (the server was restarted, the link is another
 * server's) is said in words instead of "reconnecting" for ever. It tells no more than the WebSocket's own refusal:
 * a page of another site cannot send the header without a preflight this server never answers.
 */
export function answerTokenCheck(req: IncomingMessage, res: ServerResponse, token: string): void {
  const headers = { 'Cache-Control': 'no-store', 'Content-Type': 'text/plain; charset=utf-8' };
  if (req.method !== 'GET') {
    res.writeHead(405, { ...headers, Allow: 'GET' }).end('the token check is a GET\n');
    return;
  }
  if (tokensEqual(token, headerToken(req))) res.writeHead(204, headers).end();
  else res.writeHead(401, headers).end('not this server\'s token: open the address trainbench serve printed when it started\n');
}
