import { createReadStream, promises as fs } from 'node:fs';
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

/** Serves the built renderer; unknown paths fall back to index.html for the router. */
export function staticHandler(rootDir: string, log: (line: string) => void) {
  const root = path.resolve(rootDir);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
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
    // A file removed or unreadable between stat and read must cost this response, never the server.
    createReadStream(file)
      .on('error', (err) => {
        log(`reading ${file} failed: ${err.message}`);
        res.destroy();
      })
      .pipe(res);
  };
}
