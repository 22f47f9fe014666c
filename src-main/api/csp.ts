/**
 * The app page's Content Security Policy: serve mode sends it as a header, the Electron
 * window gets it as a response header on the app's files, and index.html carries it as a
 * meta tag too (test/unit/electron-shell.test.ts checks the three agree).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  // 'self' includes the page's own WebSocket (serve mode).
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');
