/** The REST API (DESIGN §4): mount with createApi(ctx).handler or run with startHttp(ctx, {host, port}). */
export { API_BASE, createApi } from './app.js';
export { startHttp } from './server.js';
export type { HttpHandle } from './server.js';
export type { Api, ApiApp, ApiContext, ApiRequest, HealthReport, RouteFn, RouteInfo, RouteKit } from './context.js';
export type { Envelope } from './envelope.js';
export { HttpError, okEnvelope, failEnvelope } from './envelope.js';
export {
  ZERO_TIME_TEXT, formatBytes, formatLocalTime, formatPercent, shadowAllJson, toRestDevice, toRestPoint, toRestStats,
} from './rest-shape.js';
export type { RestDevice, RestDevicePoint, RestStats } from './rest-shape.js';
