import { describe, expect, it } from 'vitest';

import { allowedHostNames, createToken, isAllowedOrigin, tokensEqual } from '../../src-main/server/auth';
import { reachableUrls } from '../../src-main/server/serve';

const loopback = allowedHostNames('127.0.0.1', {}, 'rig');
/** A machine with one LAN address, a link-local IPv6 and a global IPv6. */
const interfaces = {
  lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4' as const, mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
  eth0: [
    { address: '192.168.1.20', netmask: '255.255.255.0', family: 'IPv4' as const, mac: '02:00:00:00:00:01', internal: false, cidr: '192.168.1.20/24' },
    { address: 'fe80::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6' as const, mac: '02:00:00:00:00:01', internal: false, cidr: 'fe80::1/64', scopeid: 2 },
    { address: '2001:db8::20', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6' as const, mac: '02:00:00:00:00:01', internal: false, cidr: '2001:db8::20/64', scopeid: 0 },
  ],
};

describe('serve-mode token', () => {
  it('is random, URL-safe and long enough', () => {
    const a = createToken();
    const b = createToken();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
  });

  it('compares exactly', () => {
    const t = createToken();
    expect(tokensEqual(t, t)).toBe(true);
    expect(tokensEqual(t, t.slice(1))).toBe(false);
    expect(tokensEqual(t, `${t}x`)).toBe(false);
    expect(tokensEqual(t, null)).toBe(false);
    expect(tokensEqual(t, '')).toBe(false);
  });
});

describe('origin check', () => {
  it('accepts the page served by this same loopback server', () => {
    expect(isAllowedOrigin('http://127.0.0.1:7433', '127.0.0.1:7433', loopback)).toBe(true);
    expect(isAllowedOrigin('http://localhost:9000', 'localhost:9000', loopback)).toBe(true); // SSH tunnel
    expect(isAllowedOrigin('http://[::1]:7433', '[::1]:7433', loopback)).toBe(true);
  });

  it('refuses pages from another origin', () => {
    expect(isAllowedOrigin('http://evil.example', '127.0.0.1:7433', loopback)).toBe(false);
    expect(isAllowedOrigin('http://127.0.0.1:8080', '127.0.0.1:7433', loopback)).toBe(false);
    expect(isAllowedOrigin('null', '127.0.0.1:7433', loopback)).toBe(false);
  });

  it('refuses DNS-rebinding hosts even when Origin matches Host', () => {
    expect(isAllowedOrigin('http://evil.example:7433', 'evil.example:7433', loopback)).toBe(false);
  });

  it('accepts the bind address when told to listen elsewhere', () => {
    expect(isAllowedOrigin('http://10.0.0.5:7433', '10.0.0.5:7433', allowedHostNames('10.0.0.5', {}, 'rig'))).toBe(true);
  });

  it('lets non-browser clients (no Origin) through to the token check', () => {
    expect(isAllowedOrigin(undefined, '127.0.0.1:7433', loopback)).toBe(true);
    expect(isAllowedOrigin(undefined, undefined, loopback)).toBe(false);
  });

  it('accepts the machine name and its LAN addresses when bound to every interface on purpose (--host 0.0.0.0)', () => {
    const wildcard = allowedHostNames('0.0.0.0', interfaces, 'Rig');
    expect(isAllowedOrigin('http://192.168.1.20:7433', '192.168.1.20:7433', wildcard)).toBe(true);
    expect(isAllowedOrigin('http://rig:7433', 'rig:7433', wildcard)).toBe(true);
    expect(isAllowedOrigin('http://[2001:db8::20]:7433', '[2001:db8::20]:7433', wildcard)).toBe(true);
    expect(isAllowedOrigin('http://localhost:7433', 'localhost:7433', wildcard)).toBe(true);
    // Still refused: a rebinding domain, a foreign page, and the wildcard itself (no browser can be on 0.0.0.0).
    expect(isAllowedOrigin('http://evil.example:7433', 'evil.example:7433', wildcard)).toBe(false);
    expect(isAllowedOrigin('http://evil.example', '192.168.1.20:7433', wildcard)).toBe(false);
    expect(isAllowedOrigin('http://0.0.0.0:7433', '0.0.0.0:7433', wildcard)).toBe(false);
    expect(isAllowedOrigin('http://rig:7433', 'rig:7433', loopback)).toBe(false);
  });
});

describe('printed URLs', () => {
  it('name every reachable address for a wildcard bind, loopback first, never 0.0.0.0', () => {
    expect(reachableUrls('0.0.0.0', 7433, 'T', 'rig', interfaces)).toEqual([
      'http://127.0.0.1:7433/?token=T',
      'http://rig:7433/?token=T',
      'http://192.168.1.20:7433/?token=T',
      'http://[2001:db8::20]:7433/?token=T',
    ]);
  });

  it('name the bind address otherwise, with IPv6 in brackets', () => {
    expect(reachableUrls('127.0.0.1', 7433, 'T')).toEqual(['http://127.0.0.1:7433/?token=T']);
    expect(reachableUrls('::1', 80, 'T')).toEqual(['http://[::1]:80/?token=T']);
  });
});
