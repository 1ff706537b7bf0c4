/**
 * Every write route of the RUNNING gateway, from its own route table (the "REST routes" debug line: polka's
 * routes with the scope kit.route gave each), refused without the right token: none → 401 "authorization
 * required", a wrong one → 401 "invalid token", the read token → 401 "this token may only read"; the write
 * token gets past auth (any answer but 401/429). A route is a write route when its scope says so or when
 * its method is not GET/HEAD — a POST registered as a read is itself a finding.
 */
import http from 'node:http';
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
  const ok = await passWithWriteToken(gw.http, r, s.writeToken, body);
  if (ok) problems.push(`write token: ${ok}`);
  return { route: `${r.method} ${r.path}`, problems };
}

/**
 * The write token gets past auth: an envelope that is not 401/429, or a download (the backup: a 200 with
 * Content-Disposition attachment, not JSON). Returns the problem, or '' when it passed.
 */
function passWithWriteToken(port: number, r: Route, token: string, body: unknown): Promise<string> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...(data ? { 'content-type': 'application/json' } : {}) };
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: r.path, method: r.method, headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status === 401 || status === 429) return resolve(`${status}`);
        if (status === 200 && /^attachment/.test(res.headers['content-disposition'] ?? '')) return resolve('');
        try {
          const e = JSON.parse(Buffer.concat(chunks).toString()) as { success?: unknown; errorMsg?: string };
          resolve(typeof e.success === 'boolean' ? '' : `${status} no envelope`);
        } catch {
          resolve(`${status} neither an envelope nor a download (${res.headers['content-type']})`);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', (err) => resolve(`no answer: ${err.message}`));
    req.end(data);
  });
}
