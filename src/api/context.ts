/** What the REST layer is handed by the composition root (src/gateway.ts), and the route kit it hands on. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Polka, Request } from 'polka';
import type { GatewayConfig } from '../config/types.js';
import type { DeviceIO } from '../core/io.js';
import type { ProbePoint, ProbeSummary } from '../core/point-report.js';
import type { Shadow } from '../core/shadow.js';
import type { Value } from '../core/types.js';
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
  /** Registers `method path` (path relative to `base`): auth for `access`, body read for POST/PUT, envelope out. */
  route(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, access: Access, fn: RouteFn): void;
  /**
   * A route that reads the request body itself (up to `maxBody` bytes instead of the usual limit) or writes
   * its own response (a download): auth for `access` as `route`; what `fn` returns goes out as the envelope
   * unless it has answered.
   */
  stream(method: 'GET' | 'POST', path: string, access: Access, maxBody: number, fn: (req: ApiRequest, res: ServerResponse) => Promise<unknown>): void;
}

export interface ConfigProblem {
  path: string;
  message: string;
}

export interface ApplyResult {
  version: number;
  /** What changed, in words (`device meter-2: added`). */
  changes: string[];
  /** Config sections stored but running on their old values until the next start. */
  restartRequired: string[];
}

export interface ModelInfo {
  name: string;
  manufacturer?: string;
  description?: string;
  driver: 'modbus' | 'gpio' | 'sim';
  /** `on_off`: the two states `[off, on]` of an on/off point (config/on-off.ts), shown as a switch. */
  points: { name: string; type: string; access: string; unit?: string; on_off?: [Value, Value] }[];
}

/** A test read: the values as the shadow would hold them, and point by point with units and plausibility flags. */
export interface TestReadResult {
  values: Record<string, Value>;
  errors: Record<string, string>;
  unavailable: Record<string, string>;
  points: ProbePoint[];
  summary: ProbeSummary;
}

/** The runtime configuration the console edits (src/runtime/config-manager.ts implements it). */
export interface ConfigService {
  current(): unknown;
  validate(raw: unknown): { valid: boolean; errors: ConfigProblem[] };
  apply(raw: unknown, summary?: string): Promise<ApplyResult>;
  versions(): Promise<{ version: number; time: number; summary: string }[]>;
  rollback(version: number): Promise<ApplyResult>;
  putDevice(id: string, device: unknown): Promise<ApplyResult>;
  deleteDevice(id: string): Promise<ApplyResult>;
  putBus(id: string, bus: unknown): Promise<ApplyResult>;
  deleteBus(id: string): Promise<ApplyResult>;
  models(): ModelInfo[];
  /** The configured devices (id, model, bus, unit_id, poll, ttl as written): no secrets, a read. */
  devices(): unknown[];
  scan(busId: string, from: number, to: number): Promise<number[]>;
  testRead(device: unknown): Promise<TestReadResult>;
  /** What an edited config file undid of the console's last version at this start (null: nothing). */
  fileDrift?(): { consoleVersion: number; time: number; entries: { path: string; change: string }[]; fileVersion: number; lost: { path: string; change: string }[] } | null;
  /** Applies that console version again. */
  returnToConsole?(): Promise<ApplyResult>;
  /** Keeps the file's config and drops the warning. */
  keepFile?(): void;
}

/** What the System page shows, and the buses list (src/runtime/system.ts implements it). */
export interface SystemService {
  buses(): { id: string; driver: string; running: boolean; error: string | null; [key: string]: unknown }[];
  ports(): Promise<{ path: string; manufacturer?: string; serialNumber?: string }[]>;
  info(): Promise<Record<string, unknown>>;
  logs(lines: number): unknown[];
  /** Asks the process to restart (answered first, then a clean stop); refused when nothing would start it again. */
  restart(): { restarting: true };
}

/** Backup, restore and factory reset (src/runtime/backup-service.ts implements it). */
export interface LifecycleService {
  /** Writes the backup file as the response (headers and body); with `history`, the history files too. */
  backup(res: ServerResponse, opts: { history: boolean }): Promise<void>;
  /** Reads and checks a backup file whole, stages it, and restarts to apply it; refused (nothing changed) when bad. */
  restore(body: AsyncIterable<Buffer>): Promise<Record<string, unknown> & { restarting: boolean; message: string }>;
  /** Resets when `confirm` is the gateway's id: data_dir is emptied at the restart that follows. */
  reset(confirm: unknown): Promise<{ restarting: boolean; message: string }>;
  /** For the console: the id a reset must be confirmed with, whether the gateway restarts itself, the last outcome. */
  info(): { gateway_id: string; restart_available: boolean; last: unknown };
}

/** A/B system updates (src/runtime/update-service.ts implements it). */
export interface UpdateService {
  /** The last status the system's update service wrote, with `available`, `running_version` and `request_pending`. */
  status(): Promise<Record<string, unknown>>;
  /** Streams a bundle to the update directory and asks for its install; `expectedSize`: the Content-Length. */
  install(body: AsyncIterable<Buffer>, expectedSize: number | undefined): Promise<Record<string, unknown>>;
  /** /health/shadow's `update` check; undefined when no update was ever asked for or made. */
  check(): Promise<Record<string, unknown> | undefined>;
}

/**
 * The doctor's options on a configured bus (`POST /api/v1/buses/<id>/doctor`), the body's words: a serial field
 * left out is the bus's `own` setting (the line as it runs, through the bus's queue); `auto` or another value than
 * the bus's searches, which takes the line from the bus for the run. The doctor's own options (DoctorOptions in
 * protocol/modbus/doctor-types.ts) are these with the bus's settings put in.
 */
export interface BusDoctorOptions {
  baud: 'own' | 'auto' | number;
  parity: 'own' | 'auto' | 'none' | 'even' | 'odd';
  stopBits: 'own' | 'auto' | 1 | 2;
  from: number;
  to: number;
  /** Seconds of listening without sending; 0: none. */
  listenS: number;
}

/**
 * The bus doctor on running buses (src/runtime/doctor-service.ts implements it). A refusal throws an error with
 * `status`: 400 (serial settings on a Modbus TCP bus, a bus that is not Modbus), 404 (unknown bus), 409 (a run is
 * under way on that bus, or the bus is not running).
 */
export interface BusDoctor {
  /** Starts a run and returns it at once (`state: "running"`); other serial settings than the bus's take its line. */
  begin(busId: string, options: BusDoctorOptions): unknown;
  /** The bus's current or last run (progress, then the report), or null when none was started. */
  status(busId: string): unknown;
}

export interface ApiContext {
  shadow: Shadow;
  io: DeviceIO;
  http: GatewayConfig['http'];
  log: Logger;
  health: () => HealthReport | Promise<HealthReport>;
  /** Live configuration and system pages (absent in tests that mount the API alone). */
  config?: ConfigService;
  system?: SystemService;
  lifecycle?: LifecycleService;
  updates?: UpdateService;
  doctor?: BusDoctor;
  /** Extra routes (history) mounted by the lead; use `kit.route` to get auth, body limit and the envelope. */
  extraRoutes?: (app: ApiApp, kit: RouteKit) => void;
}

/** One route of the running app: `access` as registered by kit.route, null for a route mounted directly. */
export interface RouteInfo {
  method: string;
  path: string;
  access: Access | null;
}

export interface Api {
  /** Mount on any node:http server: `http.createServer(api.handler)`. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  app: ApiApp;
  /** The route table (polka's), with each route's scope. */
  routes(): RouteInfo[];
}
