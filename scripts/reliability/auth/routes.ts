/**
 * Every write route of the RUNNING gateway, from its own route table (the "REST routes" debug line: polka's
 * routes with the scope kit.route gave each), refused without the right token: none → 401 "authorization
 * required", a wrong one → 401 "invalid token", the read token → 401 "this token may only read"; the write
 * token gets past auth (any answer but 401/429). A route is a write route when its scope says so or when
 * its method is not GET/HEAD — a POST registered as a read is itself a finding.
 */
import { api } from '../bad-input/checks.js';
import type { Gateway, Secrets } from '../bad-input/gateway.js';

export interface Route {
  method: string;
  path: string;
  access: 'read' | 'write' | 'admin' | null;
}

/** The table the gateway logged at start (log_level debug). */
export function routeTable(lines: readonly string[]): Route[] {
  const line = lines.find((l) => l.includes('"msg":"REST routes"'));
  if (!line) throw new Error('the gateway logged no "REST routes" line (log_level must be debug)');
  return (JSON.parse(line) as { routes: Route[] }).routes;
}

export const isWriteRoute = (r: Route): boolean => r.access === 'write' || r.access === 'admin' || !['GET', 'HEAD'].includes(r.method);

export interface RouteCheck {
  route: string;
  problems: string[];
}

/**
 * Probes one route four ways. The body `{"__probe": true}` (POST/PUT) and the missing parameters make every
 * handler refuse once past auth — a probe must not change the config or write a point.
 */
export async function checkRoute(gw: Gateway, s: Secrets, r: Route, from: string): Promise<RouteCheck> {
  const problems: string[] = [];
  const body = r.method === 'POST' || r.method === 'PUT' ? { __probe: true } : undefined;
  const ask = (token?: string, src?: string) => api(gw.http, r.path, { method: r.method, ...(token ? { token } : {}), ...(body ? { body } : {}), ...(src ? { from: src } : {}) });
  const expect401 = async (what: string, token: string | undefined, text: RegExp, src?: string): Promise<void> => {
    const a = await ask(token, src);
    const e = a.body;
    if (a.status !== 401 || e.success !== false || e.errorCode !== 401 || !text.test(e.errorMsg) || e.data !== null || !a.headers['www-authenticate']) {
      problems.push(`${what}: ${a.status} ${JSON.stringify(e).slice(0, 100)}`);
    }
  };
  await expect401('no token', undefined, /^authorization required/);
  // From its own address: one wrong token per source keeps the backoff (tested apart) out of the way.
  await expect401('wrong token', `x${s.writeToken}`, /^invalid token$/, from);
  await expect401('read token', s.readToken, /^this token may only read$/);
  const ok = await ask(s.writeToken);
  if (ok.status === 401 || ok.status === 429 || typeof ok.body.success !== 'boolean') problems.push(`write token: ${ok.status} ${ok.body.errorMsg}`);
  return { route: `${r.method} ${r.path}`, problems };
}
