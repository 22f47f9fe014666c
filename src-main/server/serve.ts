import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { TOKEN_QUERY_PARAM } from '../api/wire';
import type { Services } from '../core/services';
import { createToken } from './auth';
import { staticHandler } from './static-files';
import { attachWsApi } from './ws-api';

export interface ServeOptions {
  services: Services;
  rendererDir: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Fixed token for tests; a random one otherwise. */
  token?: string;
}

export interface RunningServer {
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

export const DEFAULT_PORT = 7433;

/** Serves the renderer and the WebSocket API; loopback only unless told otherwise. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? createToken();
  const serveStatic = staticHandler(options.rendererDir);
  const server = createServer((req, res) => {
    serveStatic(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  const wss = attachWsApi({ server, services: options.services, token, bindHost: host });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_PORT, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}/?${TOKEN_QUERY_PARAM}=${token}`,
    port,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
