/**
 * The runtime configuration API under the console (docs/rest.md): get, validate and apply the whole
 * config or one device/bus, versions and rollback, the model list, bus scan and test read, and the
 * System page. Changes need the write scope; the whole config too (its secrets redacted: redact.ts).
 * A refused config is a failure envelope whose `data.errors` lists every problem at its path.
 */
import { ConfigError } from '../config/load.js';
import { badRequest } from '../core/errors.js';
import type { AuthChecker } from './auth.js';
import type { ApiContext, ApiRequest, ConfigService, RouteKit, SystemService } from './context.js';
import { mountDoctorRoutes } from './doctor-routes.js';
import { mountLifecycleRoutes, mountUpdateRoutes } from './lifecycle-routes.js';
import { requireText } from './params.js';
import { redactConfig, restoreSecrets } from './redact.js';

const intParam = (req: ApiRequest, name: string, fallback: number): number => {
  const text = req.query[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n)) throw badRequest(`${name} must be an integer, not "${String(text)}"`);
  return n;
};

function validate(config: ConfigService, body: unknown): ReturnType<ConfigService['validate']> {
  try {
    return config.validate(restoreSecrets(body ?? {}, config.current()));
  } catch (err) {
    if (err instanceof ConfigError) return { valid: false, errors: (err.details as { errors: ReturnType<ConfigService['validate']>['errors'] }).errors };
    throw err;
  }
}

function mountConfig(config: ConfigService, kit: RouteKit): void {
  const id = (req: ApiRequest): string => requireText(req.query['id'], 'id');
  // Secrets go out as placeholders and come back in as the running values (redact.ts).
  kit.route('GET', '/config', 'admin', () => redactConfig(config.current()));
  kit.route('POST', '/config/validate', 'write', (_req, body) => validate(config, body));
  kit.route('PUT', '/config', 'write', (_req, body) => config.apply(restoreSecrets(body ?? {}, config.current())));
  kit.route('POST', '/config', 'write', (_req, body) => config.apply(restoreSecrets(body ?? {}, config.current())));
  kit.route('GET', '/config/versions', 'admin', () => config.versions());
  kit.route('POST', '/config/rollback', 'write', (req, body) =>
    config.rollback(Number(body?.['version'] ?? req.query['version'])));
  // An edited config file that undid console changes: what it undid, and the way back (docs/rest.md).
  if (config.fileDrift && config.returnToConsole && config.keepFile) {
    const { fileDrift, returnToConsole, keepFile } = { fileDrift: config.fileDrift.bind(config), returnToConsole: config.returnToConsole.bind(config), keepFile: config.keepFile.bind(config) };
    kit.route('GET', '/config/file-drift', 'admin', () => fileDrift());
    kit.route('POST', '/config/file-drift/console', 'write', () => returnToConsole());
    kit.route('POST', '/config/file-drift/file', 'write', () => {
      keepFile();
      return null;
    });
  }
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
  kit.route('POST', '/system/restart', 'write', () => system.restart());
  kit.route('GET', '/system/logs', 'admin', (req) => system.logs(Math.min(1000, Math.max(1, intParam(req, 'lines', 300)))));
}

export function mountConfigRoutes(ctx: ApiContext, kit: RouteKit, auth: AuthChecker): void {
  if (ctx.config) mountConfig(ctx.config, kit);
  if (ctx.system) mountSystem(ctx.system, kit);
  if (ctx.lifecycle) mountLifecycleRoutes(ctx.lifecycle, kit);
  if (ctx.updates) mountUpdateRoutes(ctx.updates, kit);
  if (ctx.doctor) mountDoctorRoutes(ctx.doctor, kit);
  // The console asks once what the token it holds may do.
  kit.route('GET', '/auth', 'read', (req) => ({ tokens: auth.enabled, canWrite: auth.canWrite(req) }));
}
