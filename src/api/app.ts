/**
 * createApi: the polka app with one error mapper, 404/405 envelopes, the body limit and bearer auth.
 * Routes themselves are in routes.ts; the shapes in rest-shape.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import polka from 'polka';
import { createAuth, type Access } from './auth.js';
import { declaredTooLarge, readFields, tooLarge } from './body.js';
import type { Api, ApiApp, ApiContext, ApiRequest, RouteInfo, RouteKit } from './context.js';
import { HttpError, okEnvelope, sendEnvelope, sendOk, toErrorResponse } from './envelope.js';
import { mountConfigRoutes } from './config-routes.js';
import { exactRoutes } from './exact-routes.js';
import { hostGuard } from './host-guard.js';
import { polkaRoutes } from './polka-routes.js';
import { mountRoutes } from './routes.js';
import { isSafeMethod, refuseCrossSite } from './site.js';
import { loopLook } from '../util/loop-look.js';

export const API_BASE = '/api/v1';

/** Paths echoed in error texts are cut short: a client may send a 16 kB URL. */
const shortPath = (path: string): string => (path.length > 200 ? `${path.slice(0, 200)}…` : path);

/** Methods registered for a path on any route, for 405 vs 404 and the Allow header. */
function allowedMethods(app: ApiApp, path: string): string[] {
  const methods = new Set<string>();
  for (const r of polkaRoutes(app)) {
    if (r.method !== '' && r.pattern.test(path)) methods.add(r.method);
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods];
}

/** What kit.route knows of a handler: its literal path and the scope it demands. */
const routeMeta = new WeakMap<object, { path: string; access: Access }>();

/**
 * Every route of the app as polka holds it, each with the scope kit.route registered (null for routes
 * mounted directly: /metrics, the console's files), so tests and the auth campaign cover a new route
 * without a hand-kept list.
 */
function routeTable(app: ApiApp): RouteInfo[] {
  return polkaRoutes(app).map((r) => {
    const meta = r.handlers.map((h) => routeMeta.get(h)).find((m) => m !== undefined);
    // regexparam's pattern of a literal path, `^\/metrics\/?$`, read back as `/metrics`.
    const literal = r.pattern.source.replace(/^\^/, '').replace(/\\\/\?\$$/, '').replace(/\\\//g, '/') || '/';
    return { method: r.method || '*', path: meta?.path ?? literal, access: meta?.access ?? null };
  });
}

/** Sends an error's envelope, after its `delayMs` when it has one (a held 401 of the auth backoff). */
function answerError(err: unknown, req: IncomingMessage, res: ServerResponse, log: ApiContext['log']): void {
  const { status, envelope, headers } = toErrorResponse(err, log);
  const delay = err instanceof HttpError ? err.delayMs : 0;
  if (delay <= 0) {
    sendEnvelope(req, res, status, envelope, headers, log);
    return;
  }
  // unref: a held answer must not keep a stopping process alive (server.close drops the socket anyway).
  setTimeout(() => {
    if (!req.socket.destroyed) sendEnvelope(req, res, status, envelope, headers, log);
  }, delay).unref();
}

export function createApi(ctx: ApiContext): Api {
  // The gateway hands an already namespaced child; a second 'part' binding would duplicate the key.
  const log = ctx.log;
  const limit = ctx.http.body_limit;
  const hostRefused = hostGuard(ctx.http.allowed_hosts);
  /** Routes that read their own bodies (kit.stream) take more than the usual limit. */
  const bigBodies = new Map<string, number>();
  const limitFor = (req: IncomingMessage): number => {
    if (bigBodies.size === 0) return limit;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    return bigBodies.get(q < 0 ? url : url.slice(0, q)) ?? limit;
  };
  const checkAuth = createAuth(ctx.http.auth);

  // The one error path: HttpError → its status, GatewayError → 200/500 + message, else 200/500 "internal error".
  const onError = (err: unknown, req: ApiRequest, res: ServerResponse): void => {
    // polka hands a bare {status: 404} for no-match when onNoMatch is not set; keep it an envelope anyway.
    const bare = typeof err === 'object' && !(err instanceof Error) ? (err as { status?: unknown }) : undefined;
    const e = bare?.status === 404
      ? new HttpError(404, `not found: ${req.method} ${shortPath(req.path ?? '')}`)
      : err;
    answerError(e, req, res, log);
  };
  const app: ApiApp = polka({
    onError,
    onNoMatch: (req, res) => {
      const allow = allowedMethods(app, req.path);
      const err = allow.length > 0
        ? new HttpError(405, `method not allowed: ${req.method} ${shortPath(req.path)} (allowed: ${allow.join(', ')})`, { Allow: allow.join(', ') })
        : new HttpError(404, `not found: ${req.method} ${shortPath(req.path)}`);
      const { status, envelope, headers } = toErrorResponse(err, log);
      sendEnvelope(req, res, status, envelope, headers, log);
    },
  });

  const exact = exactRoutes(app);
  const kit: RouteKit = {
    base: API_BASE,
    route(method, path, access, fn) {
      const handle = async (req: ApiRequest, res: ServerResponse): Promise<void> => {
        // A GET that writes (the seed's writePoint) or reveals secrets: not for other sites' pages either.
        if (access !== 'read') refuseCrossSite(req);
        checkAuth(req, access);
        // Bodies are read only after auth: an anonymous client cannot make us buffer a megabyte.
        const body = method === 'POST' || method === 'PUT' ? await readFields(req, limit) : undefined;
        const data = await fn(req, body);
        sendOk(req, res, data, log);
      };
      routeMeta.set(handle, { path: API_BASE + path, access });
      exact.add(method, API_BASE + path, handle);
      if (method === 'GET') app.get(API_BASE + path, handle);
      else if (method === 'PUT') app.put(API_BASE + path, handle);
      else if (method === 'DELETE') app.delete(API_BASE + path, handle);
      else app.post(API_BASE + path, handle);
    },
    stream(method, path, access, maxBody, fn) {
      const handle = async (req: ApiRequest, res: ServerResponse): Promise<void> => {
        if (access !== 'read') refuseCrossSite(req);
        checkAuth(req, access);
        const data = await fn(req, res);
        if (!res.headersSent) sendEnvelope(req, res, 200, okEnvelope(data), {}, log);
      };
      routeMeta.set(handle, { path: API_BASE + path, access });
      if (maxBody > limit) bigBodies.set(API_BASE + path, maxBody);
      if (method === 'GET') app.get(API_BASE + path, handle);
      else app.post(API_BASE + path, handle);
    },
  };

  mountRoutes(ctx, kit);
  mountConfigRoutes(ctx, kit, checkAuth);
  ctx.extraRoutes?.(app, kit);

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    // A look per request lets the event-loop monitor tell a stall from a busy stream of short requests.
    loopLook();
    // A browser's request under a Host that is not this gateway's (DNS rebinding): refused on every route.
    const rebound = hostRefused(req);
    if (rebound !== null) {
      const { status, envelope, headers } = toErrorResponse(new HttpError(403, rebound), log);
      sendEnvelope(req, res, status, envelope, headers, log);
      return;
    }
    // Any method that may change something, on any route (those mounted directly too), from another site's
    // page: refused before routing (site.ts).
    if (!isSafeMethod(req.method)) {
      try {
        refuseCrossSite(req);
      } catch (err) {
        const { status, envelope, headers } = toErrorResponse(err, log);
        sendEnvelope(req, res, status, envelope, headers, log);
        return;
      }
    }
    // Content-Length over the limit: answer 413 before routing or reading a byte (the connection closes).
    if (req.headers['content-length'] !== undefined) {
      const max = limitFor(req);
      if (declaredTooLarge(req, max)) {
        const { status, envelope, headers } = toErrorResponse(tooLarge(max), log);
        sendEnvelope(req, res, status, envelope, headers, log);
        return;
      }
    }
    try {
      if (exact.dispatch(req as ApiRequest, res, onError)) return;
      app.handler(req as ApiRequest, res, undefined as never);
    } catch (err) {
      // polka's own parsing is synchronous and outside its promise chain; never let it escape.
      const { status, envelope, headers } = toErrorResponse(err, log);
      sendEnvelope(req, res, status, envelope, headers, log);
    }
  };
  return { handler, app, routes: () => routeTable(app) };
}
