import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';

import { TOKEN_QUERY_PARAM } from '../api/wire';
import type { Services } from '../core/services';
import { allowedHostNames, createToken, externalAddresses, isWildcardHost, urlHostName } from './auth';
import { downloadHandler, isDownloadTarget } from './download-route';
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
  /** Where problems with clients are reported (stderr by default); they never end the server. */
  log?: (line: string) => void;
  /** Limits per client and on clients (ws-api's defaults otherwise); tests make them small. */
  maxBufferedBytes?: number;
  maxInFlight?: number;
  maxClients?: number;
  /** How long a download may wait for the browser to take more before it is dropped. */
  downloadStallMs?: number;
}

export interface RunningServer {
  /** The URL to open on this machine (or through an SSH tunnel). */
  url: string;
  /** Every URL the server answers under: loopback first, then this machine's name and addresses when bound to them. */
  urls: string[];
  port: number;
  token: string;
  close(): Promise<void>;
}

export const DEFAULT_PORT = 7433;

const stderrLog = (line: string) => process.stderr.write(`trainbench serve: ${line}\n`);

/** The URLs a browser can use: for a wildcard bind, loopback, the machine's name and each interface address. */
export function reachableUrls(host: string, port: number, token: string, hostname?: string, interfaces?: Parameters<typeof externalAddresses>[0]): string[] {
  const hosts = isWildcardHost(host)
    ? ['127.0.0.1', ...(hostname ? [hostname] : []), ...externalAddresses(interfaces)]
    : [urlHostName(host)];
  return hosts.map((h) => `http://${h}:${port}/?${TOKEN_QUERY_PARAM}=${token}`);
}

/** Serves the renderer and the WebSocket API; loopback only unless told otherwise. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? createToken();
  const log = options.log ?? stderrLog;
  const serveStatic = staticHandler(options.rendererDir, log);
  const allowedHosts = allowedHostNames(host);
  const serveDownload = downloadHandler({ downloads: options.services.downloads, token, allowedHosts, log, stallMs: options.downloadStallMs });
  const server = createServer((req, res) => {
    const download = isDownloadTarget(req.url);
    (download ? serveDownload : serveStatic)(req, res).catch((err: unknown) => {
      log(`${download ? 'download' : 'static file'} ${JSON.stringify(req.url?.slice(0, 200))} failed: ${(err as Error).message}`);
      if (!res.headersSent) res.writeHead(500).end('internal error');
      else res.destroy();
    });
  });
  const { maxBufferedBytes, maxInFlight, maxClients } = options;
  const wss = attachWsApi({ server, services: options.services, token, allowedHosts, log, maxBufferedBytes, maxInFlight, maxClients });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_PORT, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const urls = reachableUrls(host, port, token, os.hostname());
  return {
    url: urls[0],
    urls,
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
