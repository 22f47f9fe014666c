import { CONTENT_SECURITY_POLICY } from '../api/csp';

/**
 * Navigation policy: the window only ever shows the bundled renderer; http(s)
 * links open in the system browser; everything else is denied.
 */
export function isAppUrl(url: string, appUrl: string): boolean {
  try {
    const target = new URL(url);
    const app = new URL(appUrl);
    return target.protocol === app.protocol && target.host === app.host && target.pathname === app.pathname;
  } catch {
    return false;
  }
}

export function isExternalLink(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}

/**
 * The response headers of a request the window makes: the app's own files (file: URLs under
 * the renderer's folder) get the Content Security Policy as a header, as serve mode sends it,
 * besides the meta tag, which a page's own markup could not weaken but a header is the
 * stronger delivery. Other responses pass unchanged.
 */
export function appResponseHeaders(url: string, headers: Record<string, string[]>, rendererDir: string): Record<string, string[]> {
  let target: URL;
  let dir: URL;
  try {
    target = new URL(url);
    dir = new URL(`file://${rendererDir.replace(/\\/g, '/').replace(/\/?$/, '/')}`);
  } catch {
    return headers;
  }
  if (target.protocol !== 'file:' || !decodeURIComponent(target.pathname).startsWith(decodeURIComponent(dir.pathname))) return headers;
  return { ...headers, 'Content-Security-Policy': [CONTENT_SECURITY_POLICY], 'X-Content-Type-Options': ['nosniff'] };
}
