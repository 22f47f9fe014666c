import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';

import { DOWNLOAD_TOKEN_HEADER } from '../api/downloads';

/** A fresh random token for one serve session (printed in the URL, never stored). */
export function createToken(): string {
  return randomBytes(24).toString('base64url');
}

export function tokensEqual(expected: string, given: string | null | undefined): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a script sent: X-Trainbench-Token, or Authorization: Bearer. */
export function headerToken(req: IncomingMessage): string | null {
  const own = req.headers[DOWNLOAD_TOKEN_HEADER];
  if (typeof own === 'string') return own;
  const auth = req.headers.authorization;
  return auth?.startsWith('Bearer ') ? auth.slice(7).trim() : null;
}

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

export function isWildcardHost(bindHost: string): boolean {
  return WILDCARD_HOSTS.has(bindHost);
}

/** An address as it appears in a Host header or URL: IPv6 in brackets. */
export function urlHostName(address: string): string {
  return address.includes(':') && !address.startsWith('[') ? `[${address}]` : address;
}

type Interfaces = ReturnType<typeof os.networkInterfaces>;

/** This machine's non-loopback addresses a browser elsewhere can reach (link-local IPv6 needs a zone, so it is left out). */
export function externalAddresses(interfaces: Interfaces = os.networkInterfaces()): string[] {
  const out: string[] = [];
  for (const list of Object.values(interfaces)) {
    for (const info of list ?? []) {
      if (info.internal) continue;
      if (info.family === 'IPv6' && info.address.toLowerCase().startsWith('fe80')) continue;
      out.push(urlHostName(info.address));
    }
  }
  return out;
}

/**
 * The Host names a page of this server may be reached under: the loopback
 * names always (SSH tunnels), the bind address, and, when the user bound a
 * non-loopback address on purpose, this machine's name and (for a wildcard
 * bind) its interface addresses. A DNS-rebinding page carries its own domain
 * in Host, which is none of these.
 */
export function allowedHostNames(bindHost: string, interfaces?: Interfaces, hostname: string = os.hostname()): Set<string> {
  const names = new Set(LOOPBACK_HOSTS);
  const bind = urlHostName(bindHost.toLowerCase());
  if (isWildcardHost(bindHost)) {
    names.add(hostname.toLowerCase());
    for (const address of externalAddresses(interfaces)) names.add(address.toLowerCase());
  } else {
    names.add(bind);
    if (!isLoopbackHost(bind)) names.add(hostname.toLowerCase());
  }
  return names;
}

export function isLoopbackHost(name: string): boolean {
  return LOOPBACK_HOSTS.includes(name) || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function hostName(hostHeader: string): string {
  // "[::1]:7433" -> "[::1]", "localhost:7433" -> "localhost"
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  return hostHeader.split(':')[0];
}

/**
 * A WebSocket upgrade is accepted only from a page of this same server: the
 * Origin must match the Host header, and the Host must be one this server is
 * reached under (see allowedHostNames), which stops DNS-rebinding pages.
 * Clients that send no Origin (scripts, not browsers) rely on the token alone.
 */
export function isAllowedOrigin(origin: string | undefined, hostHeader: string | undefined, allowedHosts: ReadonlySet<string>): boolean {
  if (!hostHeader) return false;
  if (!allowedHosts.has(hostName(hostHeader.toLowerCase()))) return false;
  if (origin === undefined) return true;
  return origin.toLowerCase() === `http://${hostHeader.toLowerCase()}`;
}
