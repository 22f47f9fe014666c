import { describe, expect, it } from 'vitest';

import { createToken, isAllowedOrigin, tokensEqual } from '../../src-main/server/auth';

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
    expect(isAllowedOrigin('http://127.0.0.1:7433', '127.0.0.1:7433', '127.0.0.1')).toBe(true);
    expect(isAllowedOrigin('http://localhost:9000', 'localhost:9000', '127.0.0.1')).toBe(true); // SSH tunnel
    expect(isAllowedOrigin('http://[::1]:7433', '[::1]:7433', '127.0.0.1')).toBe(true);
  });

  it('refuses pages from another origin', () => {
    expect(isAllowedOrigin('http://evil.example', '127.0.0.1:7433', '127.0.0.1')).toBe(false);
    expect(isAllowedOrigin('http://127.0.0.1:8080', '127.0.0.1:7433', '127.0.0.1')).toBe(false);
    expect(isAllowedOrigin('null', '127.0.0.1:7433', '127.0.0.1')).toBe(false);
  });

  it('refuses DNS-rebinding hosts even when Origin matches Host', () => {
    expect(isAllowedOrigin('http://evil.example:7433', 'evil.example:7433', '127.0.0.1')).toBe(false);
  });

  it('accepts the bind address when told to listen elsewhere', () => {
    expect(isAllowedOrigin('http://10.0.0.5:7433', '10.0.0.5:7433', '10.0.0.5')).toBe(true);
  });

  it('lets non-browser clients (no Origin) through to the token check', () => {
    expect(isAllowedOrigin(undefined, '127.0.0.1:7433', '127.0.0.1')).toBe(true);
    expect(isAllowedOrigin(undefined, undefined, '127.0.0.1')).toBe(false);
  });
});
