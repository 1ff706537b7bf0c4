/** What the REST layer is handed by the composition root (src/gateway.ts), and the route kit it hands on. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Polka, Request } from 'polka';
import type { GatewayConfig } from '../config/types.js';
import type { DeviceIO } from '../core/io.js';
import type { Shadow } from '../core/shadow.js';
import type { Logger } from '../util/logger.js';
import type { Access } from './auth.js';
import type { Fields } from './body.js';

export interface HealthReport {
  status: 'healthy' | 'degraded' | 'unhealthy';
  checks: Record<string, unknown>;
}

export type ApiApp = Polka;
export type ApiRequest = Request;

/** A route's work: returns the envelope's `data`; a throw becomes a failure envelope (envelope.ts). */
export type RouteFn = (req: ApiRequest, body: Fields | undefined) => unknown;

export interface RouteKit {
  /** Base path of the versioned API: `/api/v1`. */
  base: string;
  /** Registers `method path` (path relative to `base`): auth for `access`, body read for POST, envelope out. */
  route(method: 'GET' | 'POST', path: string, access: Access, fn: RouteFn): void;
}

export interface ApiContext {
  shadow: Shadow;
  io: DeviceIO;
  http: GatewayConfig['http'];
  log: Logger;
  health: () => HealthReport;
  /** Extra routes (history) mounted by the lead; use `kit.route` to get auth, body limit and the envelope. */
  extraRoutes?: (app: ApiApp, kit: RouteKit) => void;
}

export interface Api {
  /** Mount on any node:http server: `http.createServer(api.handler)`. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  app: ApiApp;
}
