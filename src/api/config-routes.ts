/**
 * The runtime configuration API under the console (docs/rest.md): get, validate and apply the whole
 * config or one device/bus, versions and rollback, the model list, bus scan and test read, and the
 * System page. Changes need the write scope; the whole config (it holds tokens and passwords) too.
 * A refused config is a failure envelope whose `data.errors` lists every problem at its path.
 */
import { badRequest } from '../core/errors.js';
import type { AuthChecker } from './auth.js';
import type { ApiContext, ApiRequest, ConfigService, RouteKit, SystemService } from './context.js';
import { requireText } from './params.js';

const intParam = (req: ApiRequest, name: string, fallback: number): number => {
  const text = req.query[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n)) throw badRequest(`${name} must be an integer, not "${String(text)}"`);
  return n;
};

function mountConfig(config: ConfigService, kit: RouteKit): void {
  const id = (req: ApiRequest): string => requireText(req.query['id'], 'id');
  kit.route('GET', '/config', 'admin', () => config.current());
  kit.route('POST', '/config/validate', 'write', (_req, body) => config.validate(body ?? {}));
  kit.route('PUT', '/config', 'write', (_req, body) => config.apply(body ?? {}));
  kit.route('POST', '/config', 'write', (_req, body) => config.apply(body ?? {}));
  kit.route('GET', '/config/versions', 'admin', () => config.versions());
  kit.route('POST', '/config/rollback', 'write', (req, body) =>
    config.rollback(Number(body?.['version'] ?? req.query['version'])));
  kit.route('PUT', '/config/device', 'write', (req, body) => config.putDevice(id(req), body ?? {}));
  kit.route('DELETE', '/config/device', 'write', (req) => config.deleteDevice(id(req)));
  kit.route('PUT', '/config/bus', 'write', (req, body) => config.putBus(id(req), body ?? {}));
  kit.route('DELETE', '/config/bus', 'write', (req) => config.deleteBus(id(req)));
  kit.route('GET', '/models', 'read', () => config.models());
  kit.route('GET', '/devices', 'read', () => config.devices());
  // A scan occupies the bus for seconds: a change, not a read.
  kit.route('POST', '/bus/scan', 'write', async (req) => ({
    units: await config.scan(id(req), intParam(req, 'from', 1), intParam(req, 'to', 247)),
  }));
  kit.route('POST', '/device/testRead', 'write', (_req, body) => config.testRead(body ?? {}));
}

function mountSystem(system: SystemService, kit: RouteKit): void {
  kit.route('GET', '/buses', 'read', () => system.buses());
  kit.route('GET', '/buses/ports', 'read', () => system.ports());
  kit.route('GET', '/system', 'read', () => system.info());
  kit.route('GET', '/system/logs', 'admin', (req) => system.logs(Math.min(1000, Math.max(1, intParam(req, 'lines', 300)))));
}

export function mountConfigRoutes(ctx: ApiContext, kit: RouteKit, auth: AuthChecker): void {
  if (ctx.config) mountConfig(ctx.config, kit);
  if (ctx.system) mountSystem(ctx.system, kit);
  // The console asks once what the token it holds may do.
  kit.route('GET', '/auth', 'read', (req) => ({ tokens: auth.enabled, canWrite: auth.canWrite(req) }));
}
