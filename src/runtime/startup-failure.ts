/**
 * Start-up failures a user can fix (a port taken, data_dir not writable or used by another gateway) as one
 * line naming the cause and the setting that fixes it; main.ts prints it without a stack trace and exits 1.
 * Anything not recognised here is a bug and keeps its stack.
 */
import type { GatewayConfig, ServerConfig } from '../config/types.js';

/** A failure whose message is already the line to show. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

type Errno = NodeJS.ErrnoException & { port?: number; address?: string };

interface PortSetting { setting: string; host: string; port: number; off?: string }

/** A Modbus TCP server's listening port: `servers[<id>].port`. */
const serverPort = (server: ServerConfig): PortSetting[] =>
  server.transport === 'tcp' ? [{ setting: `servers[${server.id}].port`, host: server.host, port: server.port }] : [];

/** Settings that bind a port, in the order they are started (the first that matches is named). */
function portSettings(config: GatewayConfig): PortSetting[] {
  const out: PortSetting[] = [];
  if (config.mqtt.enable) {
    out.push({ setting: 'mqtt.port', host: config.mqtt.host, port: config.mqtt.port, off: 'mqtt.enable=false' });
    out.push({ setting: 'mqtt.ws_port', host: config.mqtt.host, port: config.mqtt.ws_port, off: 'mqtt.enable=false' });
  }
  out.push({ setting: 'http.port', host: config.http.host, port: config.http.port });
  for (const server of config.servers) out.push(...serverPort(server));
  return out;
}

/** Who usually holds a well-known port on a Pi next to Home Assistant. */
const usualHolder = (port: number): string =>
  port === 1883 || port === 8883 ? ' (Mosquitto?)' : port === 8083 || port === 9001 ? ' (a broker\'s WebSocket listener?)' : '';

const ACCESS = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The line for a listener that could not bind, naming the setting; undefined when no setting matches. */
function describeListen(e: Errno, settings: PortSetting[]): string | undefined {
  // By port; by address only for an address that is not this machine's (other listeners may share a host).
  const hit = settings.find((s) => s.port !== 0 && s.port === e.port)
    ?? (e.code === 'EADDRNOTAVAIL' ? settings.find((s) => s.host === e.address) : undefined);
  if (!hit) return undefined;
  const fix = hit.off ? `set ${hit.setting} or ${hit.off}` : `set ${hit.setting}`;
  if (e.code === 'EADDRINUSE') return `${hit.setting} ${hit.port} is in use by another program${usualHolder(hit.port)}: ${fix}`;
  if (e.code === 'EADDRNOTAVAIL') return `${hit.setting.replace(/\.(ws_)?port$/, '.host')} ${hit.host} is not an address of this machine: set it to one (0.0.0.0 = every interface)`;
  if (e.code === 'EACCES') return `${hit.setting} ${hit.port} is below 1024 and needs privileges this process lacks: ${fix} (1024 or above)`;
  return undefined;
}

const isListenFailure = (e: Errno): boolean => e.syscall === 'listen' || e.code === 'EADDRINUSE' || e.code === 'EADDRNOTAVAIL';

/**
 * The one line logged when a Modbus server cannot start. The gateway keeps running without that server
 * (its buses, API and other servers are unaffected; /metrics shows it down), so the line says so.
 */
export function describeServerFailure(err: unknown, server: ServerConfig): string {
  const e = err as Errno;
  const line = err instanceof Error && typeof e.code === 'string' && isListenFailure(e) ? describeListen(e, serverPort(server)) : undefined;
  const why = line ?? (server.transport === 'rtu'
    ? `servers[${server.id}].port ${server.port} cannot be opened: ${(err as Error).message ?? String(err)}`
    : `modbus server ${server.id} failed to start: ${(err as Error).message ?? String(err)}`);
  return `${why}; the gateway runs on without modbus server ${server.id}`;
}

/** The one line for a start-up failure the user can fix, or undefined for anything else. */
export function describeStartupFailure(err: unknown, config: GatewayConfig): string | undefined {
  if (err instanceof StartupError) return err.message;
  const e = err as Errno;
  if (!(err instanceof Error) || typeof e.code !== 'string') return undefined;
  if (isListenFailure(e)) return describeListen(e, portSettings(config));
  const dataDir = config.gateway.data_dir;
  if (ACCESS.has(e.code) && typeof e.path === 'string' && (e.path === dataDir || e.path.startsWith(`${dataDir}/`) || dataDir.startsWith(`${e.path}/`))) {
    return `gateway.data_dir ${dataDir} is not writable (${e.code} on ${e.path}): give the service's user write access to it, or set gateway.data_dir`;
  }
  if ((e.code === 'ENOTDIR' || e.code === 'EEXIST') && typeof e.path === 'string' && dataDir.startsWith(e.path)) {
    return `gateway.data_dir ${dataDir} cannot be a directory (${e.code} on ${e.path}): set gateway.data_dir`;
  }
  // A directory that exists yet takes no new entries (/proc, /sys): mkdir says ENOENT there.
  if (e.code === 'ENOENT' && e.syscall === 'mkdir' && typeof e.path === 'string' && (e.path === dataDir || dataDir.startsWith(`${e.path}/`))) {
    return `gateway.data_dir ${dataDir} cannot be made (${e.code} on ${e.path}: no directory can be made there): set gateway.data_dir`;
  }
  if (e.code === 'ENOSPC') return `no space left on the disk of gateway.data_dir ${dataDir}: free some space, or set gateway.data_dir`;
  return undefined;
}
