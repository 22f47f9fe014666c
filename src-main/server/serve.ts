import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';

import { printable } from '../api/shell-word';
import { TOKEN_QUERY_PARAM } from '../api/wire';
import type { Services } from '../core/services';
import { allowedHostNames, createToken, externalAddresses, headerToken, isWildcardHost, tokensEqual, urlHostName } from './auth';
import { guardConnections } from './connection-guard';
import { downloadHandler, isDownloadTarget } from './download-route';
import { staticHandler } from './static-files';
import { answerTokenCheck, isTokenCheckTarget } from './token-check';
import { isUploadTarget, uploadHandler } from './upload-route';
import { attachWsApi, splitTarget } from './ws-api';

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
  maxInFlightTotal?: number;
  maxClients?: number;
  /** A client whose answers wait this long with nothing drained is dropped (tests shorten it). */
  answerStallMs?: number;
  /** Answers not yet read over all connections (tests make it small). */
  maxWaitingAnswerBytes?: number;
  /** Messages and bytes worked on a second over all connections, and the weight free of the byte budget (tests; ws-limits.ts). */
  messageRate?: { messages: number; bytes: number; freeBytes: number };
  /** Bytes read from all WebSockets a second, and at once (tests; ws-limits.ts's INGRESS_BYTES_PER_SECOND). */
  ingressRate?: { bytes: number; burst: number; minRead: number };
  /** Reads one WebSocket message may arrive in (tests; ws-limits.ts's MAX_READS_PER_MESSAGE). */
  maxReadsPerMessage?: number;
  /** How long a download may wait for the browser to take more before it is dropped. */
  downloadStallMs?: number;
  /** The slowest a reader may take a zip (download-route's default unless a test makes it small). */
  downloadMinRate?: { bytes: number; windowMs: number };
  /** Below this average (bytes a second) a download gives its slot to a new one when all are taken. */
  downloadFairBytesPerSecond?: number;
  /** A static file's client that stops reading for this long is closed (tests shorten it). */
  staticStallMs?: number;
  /** The largest data file an upload into sources/ takes (DEFAULT_SOURCE_UPLOAD_MAX_BYTES otherwise), and how long one may send nothing. */
  uploadMaxBytes?: number;
  uploadStallMs?: number;
  /** The slowest an upload may be (upload-route's default unless a test makes it small). */
  uploadMinRate?: { bytes: number; windowMs: number };
  /** Below this average an upload gives its slot to a new one when all are taken (upload-route's default otherwise). */
  uploadFairBytesPerSecond?: number;
  /** Bytes read from all uploads together in a second (upload-route's default otherwise). */
  uploadBytesPerSecond?: number;
  /** Free space an uploaded file must leave on the workspace's disk (source-files' default otherwise). */
  uploadKeepFreeBytes?: number;
  /** How long a connection may take to send a request's headers (a minute otherwise); tests make it short. */
  headersTimeoutMs?: number;
  /** Open HTTP connections at most (MAX_HTTP_CONNECTIONS otherwise). */
  maxConnections?: number;
}

/** Open HTTP connections: a page makes a handful; a flood of idle ones must not use up the process's files. */
export const MAX_HTTP_CONNECTIONS = 512;

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

/** A request that says it sends a body (browsers' GETs never do). */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Serves the renderer and the WebSocket API; loopback only unless told otherwise. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? createToken();
  // One line each, whatever a message quotes (a workspace file's name, a client's URL): control characters escaped.
  const sink = options.log ?? stderrLog;
  const log = (line: string) => sink(printable(line));
  const serveStatic = staticHandler(options.rendererDir, log, options.staticStallMs);
  const allowedHosts = allowedHostNames(host);
  const serveDownload = downloadHandler({ downloads: options.services.downloads, token, allowedHosts, log, stallMs: options.downloadStallMs, minRate: options.downloadMinRate, fairBytesPerSecond: options.downloadFairBytesPerSecond });
  const serveUpload = uploadHandler({ workspace: options.services.workspace, token, allowedHosts, log, maxBytes: options.uploadMaxBytes, stallMs: options.uploadStallMs, minRate: options.uploadMinRate, fairBytesPerSecond: options.uploadFairBytesPerSecond, bytesPerSecond: options.uploadBytesPerSecond, keepFreeBytes: options.uploadKeepFreeBytes });
  // No limit on a whole request's time (Node's is 5 minutes): an upload of gigabytes over a tunnel takes longer,
  // and the upload route drops a sender that stalls instead. Headers still have to arrive within a minute: said
  // here, since Node derives its headers limit from the request limit, and 0 there switched it off.
  const headersTimeout = options.headersTimeoutMs ?? 60_000;
  const limits = { requestTimeout: 0, headersTimeout, connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(headersTimeout / 4))) };
  const server = createServer(limits, (req, res) => {
    const route = isDownloadTarget(req.url) ? 'download' : isUploadTarget(req.url) ? 'upload' : 'static file';
    // Without that limit a body trickled after a GET would hold its connection open for ever: only an upload
    // takes a body; any other request with one is answered and its connection closed.
    if (route !== 'upload' && hasBody(req)) {
      res.writeHead(413, { Connection: 'close', 'Content-Type': 'text/plain; charset=utf-8' }).end('only an upload takes a request body');
      return;
    }
    if (isTokenCheckTarget(req.url)) {
      answerTokenCheck(req, res, token);
      return;
    }
    const handle = route === 'download' ? serveDownload : route === 'upload' ? serveUpload : serveStatic;
    handle(req, res).catch((err: unknown) => {
      log(`${route} ${JSON.stringify(req.url?.slice(0, 200))} failed: ${(err as Error).message}`);
      if (!res.headersSent) res.writeHead(500).end('internal error');
      else res.destroy();
    });
  });
  // A page load shows the token in its URL, a script's request in a header.
  const shownToken = (req: IncomingMessage) => tokensEqual(token, headerToken(req)) || tokensEqual(token, splitTarget(req.url).query.get(TOKEN_QUERY_PARAM));
  guardConnections(server, headersTimeout, options.maxConnections ?? MAX_HTTP_CONNECTIONS, shownToken);
  const { maxBufferedBytes, maxInFlight, maxInFlightTotal, maxClients, answerStallMs, maxWaitingAnswerBytes, messageRate, ingressRate, maxReadsPerMessage } = options;
  const wss = attachWsApi({ server, services: options.services, token, allowedHosts, log, maxBufferedBytes, maxInFlight, maxInFlightTotal, maxClients, answerStallMs, maxWaitingAnswerBytes, messageRate, ingressRate, maxReadsPerMessage });

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
