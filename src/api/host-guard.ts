/**
 * DNS rebinding guard (docs/rest.md "Browser safety"). A page at `http://evil.example:8081` whose name the
 * attacker then points at the gateway's LAN address is, to the browser, the same origin as the gateway: its
 * requests carry `Sec-Fetch-Site: same-origin` and pass the cross-site checks (site.ts), and with no token
 * configured it could read the shadow and write points. What gives it away is the Host header: the
 * attacker's name. So a browser's request is served only under a Host the gateway knows for itself: an IP
 * address, `localhost`, this machine's hostname (and `<hostname>.local`, mDNS), or a name listed in
 * `http.allowed_hosts` (a DNS name the user gave the gateway). Clients that are not browsers (curl, scripts,
 * Home Assistant) are not affected: they are no rebinding victims.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import os from 'node:os';
import { fromBrowser } from './site.js';

/** The name part of a Host header: lower case, without the port; IPv6 literals without brackets. */
export function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') > 0 ? h.indexOf(']') : undefined);
  const colon = h.lastIndexOf(':');
  return colon >= 0 && h.indexOf(':') === colon ? h.slice(0, colon) : h;
}

/**
 * A test of Host names a browser may use: `allowed` entries are names (`gateway.lan`) or suffix patterns
 * (`*.lan`: any name ending in `.lan`).
 */
export function hostGuard(allowed: readonly string[] = [], machine = os.hostname()): (req: IncomingMessage) => string | null {
  const own = new Set(['localhost', machine.toLowerCase(), `${machine.toLowerCase()}.local`]);
  const names = new Set(allowed.filter((a) => !a.startsWith('*.')).map((a) => a.toLowerCase()));
  const suffixes = allowed.filter((a) => a.startsWith('*.')).map((a) => a.slice(1).toLowerCase());
  const known = (name: string): boolean =>
    isIP(name) !== 0 || own.has(name) || name.endsWith('.localhost') || names.has(name) || suffixes.some((s) => name.endsWith(s));
  return (req) => {
    if (!fromBrowser(req)) return null;
    const name = hostName(req.headers.host ?? '');
    if (name !== '' && known(name)) return null;
    return `Host ${(req.headers.host ?? '(none)').slice(0, 100)} is not a name of this gateway (a DNS rebinding page would use one): ` +
      'open the console by its IP address or hostname, or add the name to http.allowed_hosts';
  };
}
