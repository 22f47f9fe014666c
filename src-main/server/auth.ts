import { randomBytes, timingSafeEqual } from 'node:crypto';

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

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

function hostName(hostHeader: string): string {
  // "[::1]:7433" -> "[::1]", "localhost:7433" -> "localhost"
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  return hostHeader.split(':')[0];
}

/**
 * A WebSocket upgrade is accepted only from a page of this same server: the
 * Origin must match the Host header, and the Host must be a loopback name (or
 * the address we were told to bind), which stops DNS-rebinding pages. Clients
 * that send no Origin (scripts, not browsers) rely on the token alone.
 */
export function isAllowedOrigin(origin: string | undefined, hostHeader: string | undefined, bindHost: string): boolean {
  if (!hostHeader) return false;
  const name = hostName(hostHeader.toLowerCase());
  if (!LOOPBACK_HOSTS.has(name) && name !== bindHost.toLowerCase()) return false;
  if (origin === undefined) return true;
  return origin.toLowerCase() === `http://${hostHeader.toLowerCase()}`;
}
