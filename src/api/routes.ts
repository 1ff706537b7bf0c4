/** The `/api/v1` routes of DESIGN §4 (device, shadow, health, stats); history is mounted by the lead. */
import { unknownDevice } from '../core/errors.js';
import type { ApiContext, ApiRequest, RouteKit } from './context.js';
import type { Fields } from './body.js';
import { pick, requireText, requireValue, requireValues } from './params.js';
import { shadowAllJson, toRestDevice, toRestPoint, toRestStats } from './rest-shape.js';

/** POST writePoint: a body with `values` is the batch form, anything else the single form. */
async function writePoint(ctx: ApiContext, req: ApiRequest, body: Fields | undefined): Promise<null> {
  const sources = [body, req.query];
  const id = requireText(pick(sources, 'id'), 'id');
  if (body && Object.hasOwn(body, 'values')) {
    await ctx.io.writePoints(id, requireValues(body['values']));
    return null;
  }
  const point = requireText(pick(sources, 'point'), 'point');
  const value = requireValue(pick(sources, 'value'), 'value');
  await ctx.io.writePoints(id, [{ name: point, value }]);
  return null;
}

async function writePoints(ctx: ApiContext, req: ApiRequest, body: Fields | undefined): Promise<null> {
  const id = requireText(pick([body, req.query], 'id'), 'id');
  await ctx.io.writePoints(id, requireValues(body?.['values']));
  return null;
}

export function mountRoutes(ctx: ApiContext, kit: RouteKit): void {
  const { shadow, io } = ctx;
  const q = (req: ApiRequest, name: string): string => requireText(req.query[name], name);

  // Upstream's liveness probe (driver-box GET /api/v1/ok → data true); kept for client compatibility.
  kit.route('GET', '/ok', 'read', () => true);

  kit.route('GET', '/device/readPoint', 'read', (req) => {
    const id = q(req, 'id');
    return io.readPoint(id, q(req, 'point'));
  });
  kit.route('GET', '/device/writePoint', 'write', (req) => writePoint(ctx, req, undefined));
  kit.route('POST', '/device/writePoint', 'write', (req, body) => writePoint(ctx, req, body));
  kit.route('POST', '/device/writePoints', 'write', (req, body) => writePoints(ctx, req, body));

  kit.route('GET', '/shadow/all', 'read', () => shadowAllJson(shadow));
  kit.route('GET', '/shadow/device', 'read', (req) => {
    const device = shadow.GetDeviceRecord(q(req, 'id'));
    if (!device) throw unknownDevice();
    return toRestDevice(device);
  });
  kit.route('GET', '/shadow/devicePoint', 'read', (req) => {
    const id = q(req, 'id');
    return toRestPoint(shadow.GetPointRecord(id, q(req, 'point')));
  });
  kit.route('GET', '/shadow/stats', 'read', () => toRestStats(shadow.stats()));
  kit.route('GET', '/health/shadow', 'read', () => ctx.health());
}
