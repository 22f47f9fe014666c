import { createReadStream, promises as fs } from 'node:fs';
import { pipeline } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';

import { CONTENT_SECURITY_POLICY } from '../api/csp';

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

/** A response its client stops reading gets this long before its connection is closed (a page's asset takes ms). */
const STALL_MS = 60_000;
/**
 * Responses one connection may have under way at once. Browsers do not pipeline requests; a client that sends
 * dozens on a connection it never reads would have each buffered here (2 GB for 520 such connections).
 */
const MAX_PIPELINED = 2;

/** Serves the built renderer; unknown paths fall back to index.html for the router. */
export function staticHandler(rootDir: string, log: (line: string) => void, stallMs = STALL_MS) {
  const root = path.resolve(rootDir);
  const underWay = new WeakMap<object, number>();
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const socket = req.socket;
    const n = (underWay.get(socket) ?? 0) + 1;
    if (n > MAX_PIPELINED) {
      socket.destroy();
      return;
    }
    underWay.set(socket, n);
    res.once('close', () => underWay.set(socket, (underWay.get(socket) ?? 1) - 1));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      res.writeHead(400).end('bad path');
      return;
    }
    let file = path.resolve(root, '.' + pathname);
    if (file !== root && !file.startsWith(root + path.sep)) {
      res.writeHead(403).end('forbidden');
      return;
    }
    const stat = await fs.stat(file).catch(() => null);
    if (!stat || stat.isDirectory()) file = path.join(root, 'index.html');
    const exists = await fs.stat(file).catch(() => null);
    if (!exists) {
      res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`renderer not built: ${file} is missing (run "npm run build")`);
      return;
    }
    res.writeHead(200, {
      'Content-Type': MIME[path.extname(file)] ?? 'application/octet-stream',
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-cache',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    // The connection may have gone while the file was looked up (or been closed for pipelining): nothing to open.
    if (socket.destroyed) return;
    // A client that stops reading holds no more than its connection, and only for a while.
    res.setTimeout(stallMs, () => res.destroy());
    // pipeline closes the file however the response ends: a client that drops the connection mid-file (thousands of
    // times over) would otherwise leave the file open each time, until the process runs out of descriptors. A file
    // removed or unreadable between stat and read costs this response, never the server. A response queued behind
    // another on its connection has no socket yet and never closes by itself: the connection's close ends its file.
    const stream = createReadStream(file);
    const closeFile = () => stream.destroy();
    socket.once('close', closeFile);
    pipeline(stream, res, (err) => {
      socket.off('close', closeFile);
      if (err && (err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') log(`reading ${file} failed: ${err.message}`);
    });
  };
}
