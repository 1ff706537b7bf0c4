/**
 * Browser safety without tokens (docs/rest.md "Browser safety"). With no token configured (install.sh's
 * default) a web page the user visits could otherwise write through the user's browser: a cross-site form
 * or `fetch` POST, or an `<img>` pointing at `GET /device/writePoint`. Browsers say where a request comes
 * from: `Sec-Fetch-Site` (Chromium, Firefox, Safari 16.4+) and `Origin` (every browser, on POST). So writes
 * and reads of secrets from another site are refused, whatever the token; clients that are not browsers
 * (curl, scripts, Home Assistant, driver-box clients) send neither header and are not affected.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './envelope.js';

/** Methods that never change anything (a GET that writes is marked by its route's scope instead). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export const isSafeMethod = (method: string | undefined): boolean => SAFE_METHODS.has(method ?? 'GET');

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** `host[:port]` of Host as the origin's scheme writes it (its default port dropped), or null if malformed. */
function hostOf(scheme: string, host: string): string | null {
  try {
    return new URL(`${scheme}//${host}`).host.toLowerCase();
  } catch {
    return null;
  }
}

/**
 * Why a request comes from another site, or null when it does not (same origin, typed in the address
 * bar, or not from a browser at all).
 * - `Sec-Fetch-Site` is set by the browser itself and cannot be forged by a page: only `same-origin` and
 *   `none` (the user typed or bookmarked the URL) pass; `same-site` is another origin of the same site
 *   (another port of the same address: another web app on the LAN box) and is refused too.
 * - Without it (an older browser), `Origin` must name the host the request was sent to (its Host header):
 *   the console opened at `http://192.168.1.20:8081` sends `Origin: http://192.168.1.20:8081` and
 *   `Host: 192.168.1.20:8081`; opened as `http://gateway.local:8081`, both name `gateway.local:8081`.
 *   `Origin: null` (a sandboxed frame, a `file:` page) is refused.
 */
export function crossSiteReason(req: IncomingMessage): string | null {
  const site = single(req.headers['sec-fetch-site'])?.trim().toLowerCase();
  if (site !== undefined && site !== '') {
    return site === 'same-origin' || site === 'none' ? null : `Sec-Fetch-Site: ${site.slice(0, 40)}`;
  }
  const origin = single(req.headers.origin)?.trim();
  if (origin === undefined || origin === '') return null;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return `Origin: ${origin.slice(0, 100)}`;
  }
  if (origin === 'null' || (url.protocol !== 'http:' && url.protocol !== 'https:')) return `Origin: ${origin.slice(0, 100)}`;
  const host = hostOf(url.protocol, req.headers.host ?? '');
  return host !== null && host === url.host.toLowerCase()
    ? null
    : `Origin ${origin.slice(0, 100)} is not this host (${(req.headers.host ?? '').slice(0, 100)})`;
}

/** Whether the request comes from a browser at all (a page's request carries one of these). */
export const fromBrowser = (req: IncomingMessage): boolean =>
  req.headers.origin !== undefined || req.headers['sec-fetch-site'] !== undefined;

/** Throws the 403 envelope for a cross-site request. */
export function refuseCrossSite(req: IncomingMessage): void {
  const reason = crossSiteReason(req);
  if (reason !== null) {
    throw new HttpError(403, `cross-site request refused: ${reason} (writes and secrets are served to this gateway's own pages only)`);
  }
}
