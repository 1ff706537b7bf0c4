/**
 * The HTTP part: the REST API, `/metrics`, the WebSocket event stream and the console on one server.
 * Reads' auth applies to /metrics and the stream (which also takes `?token=`: browsers cannot set headers there).
 */
import type { AddressInfo } from 'node:net';
import { createAuth } from '../api/auth.js';
import type { ApiApp, ApiContext, RouteKit } from '../api/context.js';
import { attachEventStream, type EventStream } from '../api/event-stream.js';
import { hostGuard } from '../api/host-guard.js';
import { startHttp, type HttpHandle } from '../api/server.js';
import type { Part } from '../core/lifecycle.js';

export interface HttpPart extends Part {
  readonly port: number;
  stats(): Record<string, unknown>;
}

export interface HttpPartOptions {
  api: ApiContext;
  host: string;
  port: number;
  /** Prometheus text of every part, built when scraped. */
  metrics: () => Promise<string>;
  /** More routes (history, console files). */
  routes: ((app: ApiApp, kit: RouteKit) => void)[];
}

export function createHttpPart(opts: HttpPartOptions): HttpPart {
  let http: HttpHandle | undefined;
  let stream: EventStream | undefined;
  const checkAuth = createAuth(opts.api.http.auth);
  return {
    name: 'http',
    get port() {
      return http ? (http.server.address() as AddressInfo).port : 0;
    },
    async start() {
      http = await startHttp({
        ...opts.api,
        extraRoutes: (app, kit) => {
          for (const mount of opts.routes) mount(app, kit);
          // Prometheus scrapes outside /api/v1, in its own text format (no envelope); reads' auth applies.
          app.get('/metrics', async (req, res) => {
            checkAuth(req, 'read');
            const body = await opts.metrics();
            // api/metrics.js is loaded at the first scrape, not at every start.
            const { METRICS_CONTENT_TYPE } = await import('../api/metrics.js');
            // A bad chunk in the request's body, seen while the text was built, was already answered (400 and close).
            if (res.headersSent || res.writableEnded) return;
            res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(body) });
            res.end(body);
          });
        },
      }, { host: opts.host, port: opts.port });
      stream = attachEventStream(http.server, opts.api.shadow.bus, {
        hostRefused: hostGuard(opts.api.http.allowed_hosts),
        authorize: (req) => {
          try {
            checkAuth(req, 'read', { allowQuery: true });
            return true;
          } catch {
            return false;
          }
        },
      });
    },
    async stop() {
      stream?.close();
      await http?.close();
    },
    stats: () => ({ websocket: stream?.stats() ?? null }),
  };
}
