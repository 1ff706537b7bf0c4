/**
 * Loading a config: parse, apply env overrides, validate against schema.json (defaults filled, durations and
 * sizes converted), merge the model library, run the checks the schema cannot express, and report EVERY
 * problem at once as `path: message` — startup refuses before touching hardware.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../core/errors.js';
import type { ConfigChecker } from './checkers.js';
import { checkCrossReferences } from './cross-checks.js';
import { describeJsonError } from './json.js';
import { checkModel, isObj } from './model-checks.js';
import { readModelLibrary, type ModelLibrary } from './models.js';
import { joinPath } from './path.js';
import { checkSystem } from './system-checks.js';
import type { GatewayConfig, ModelConfig, PointConfig, ResolvedDevice } from './types.js';
import { formatAjvErrors, SCHEMA_URL, validateConfigShape, validateModelShape } from './validator.js';

export type { ConfigChecker } from './checkers.js';

/** The config is invalid; `problems` lists every problem as `path: message` (`(root): …` for the whole file). */
export class ConfigError extends GatewayError {
  constructor(readonly problems: string[]) {
    super('CONFIG_INVALID', `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    // The REST envelope's `data` of a refused config: every problem at its path, for the console to place.
    this.details = { errors: problems.map((line) => {
      const at = line.indexOf(': ');
      return at < 0 ? { path: '(root)', message: line } : { path: line.slice(0, at), message: line.slice(at + 2) };
    }) };
  }
}

export interface ValidateOptions {
  /** Source of the SHADOWGATE_* overrides (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Library models by name, instead of reading board/models (problems name them `board/models/<name>.json`). */
  models?: Record<string, unknown>;
  /** Driver checks to run after the schema passed (default none). */
  checkers?: readonly ConfigChecker[];
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Directory of the model library (default: the repo's board/models). */
  modelsDir?: string;
  checkers?: readonly ConfigChecker[];
}

/** Absolute path of the shipped schema (for `"$schema"` in configs and editor setup). */
export function schemaPath(): string {
  return fileURLToPath(SCHEMA_URL);
}

// Tests and the systemd unit move ports and data without editing the file; the env wins over the file.
const ENV_OVERRIDES = [
  { name: 'SHADOWGATE_DATA_DIR', section: 'gateway', key: 'data_dir', port: false },
  { name: 'SHADOWGATE_HTTP_PORT', section: 'http', key: 'port', port: true },
  { name: 'SHADOWGATE_MQTT_PORT', section: 'mqtt', key: 'port', port: true },
  { name: 'SHADOWGATE_MQTT_WS_PORT', section: 'mqtt', key: 'ws_port', port: true },
] as const;

function applyEnv(cfg: Record<string, unknown>, env: NodeJS.ProcessEnv, problems: string[]): void {
  for (const { name, section, key, port } of ENV_OVERRIDES) {
    const text = env[name]?.trim();
    if (!text) continue;
    if (port && !(/^\d{1,5}$/.test(text) && Number(text) <= 65535)) {
      problems.push(`$${name}: must be a port number 0-65535 (got ${JSON.stringify(env[name])})`);
      continue;
    }
    cfg[section] ??= {};
    const target = cfg[section];
    if (isObj(target)) target[key] = port ? Number(text) : text;
  }
}

function cloneJson(raw: unknown): unknown {
  try {
    return structuredClone(raw);
  } catch {
    return undefined;
  }
}

/** Validates the library models not shadowed by an inline model; returns them by name (valid or not). */
function checkLibrary(library: ModelLibrary, inline: Record<string, unknown>, problems: string[]): Map<string, { raw: unknown; valid: boolean }> {
  problems.push(...library.problems);
  const out = new Map<string, { raw: unknown; valid: boolean }>();
  for (const [name, { raw, label }] of Object.entries(library.models)) {
    if (Object.hasOwn(inline, name)) continue; // the inline model wins; its file is not used
    const result = validateModelShape(raw);
    const found = [
      ...formatAjvErrors(result.errors, `${label}: `),
      ...checkModel(raw, (rel) => `${label}: ${rel || '(root)'}`),
    ];
    problems.push(...found);
    out.set(name, { raw, valid: found.length === 0 });
  }
  return out;
}

function libraryFromRecord(models: Record<string, unknown>): ModelLibrary {
  const library: ModelLibrary = { models: {}, problems: [] };
  for (const [name, raw] of Object.entries(models)) library.models[name] = { raw: cloneJson(raw), label: `board/models/${name}.json` };
  return library;
}

function validateWithLibrary(raw: unknown, library: ModelLibrary, env: NodeJS.ProcessEnv, checkers: readonly ConfigChecker[]): GatewayConfig {
  const problems: string[] = [];
  const cfg = cloneJson(raw);
  if (!isObj(cfg)) throw new ConfigError([`(root): must be a JSON object (got ${Array.isArray(raw) ? 'an array' : typeof raw})`]);
  applyEnv(cfg, env, problems);

  const shape = validateConfigShape(cfg);
  problems.push(...formatAjvErrors(shape.errors));
  const inline = isObj(cfg.models) ? cfg.models : {};
  for (const [name, model] of Object.entries(inline)) {
    const base = joinPath('models', name);
    problems.push(...checkModel(model, (rel) => (rel ? `${base}${rel.startsWith('[') ? '' : '.'}${rel}` : base)));
  }
  const libraryModels = checkLibrary(library, inline, problems);
  const merged = new Map<string, unknown>([...[...libraryModels].map(([name, m]) => [name, m.raw] as const), ...Object.entries(inline)]);
  problems.push(...checkCrossReferences(cfg, merged));
  problems.push(...checkSystem(cfg));

  // fromEntries defines own properties, so even a model called "__proto__" stays an ordinary entry.
  const models: Record<string, ModelConfig> = Object.fromEntries(
    [...merged]
      .filter((entry): entry is [string, Record<string, unknown>] => isObj(entry[1]))
      .map(([name, model]) => [name, { ...(model as unknown as ModelConfig), name: typeof model.name === 'string' ? model.name : name }]),
  );
  const config = { ...(cfg as unknown as GatewayConfig), models };
  const libraryValid = [...libraryModels.values()].every((m) => m.valid);
  if (shape.ok && libraryValid) {
    for (const check of checkers) {
      try {
        problems.push(...check(config));
      } catch (e) {
        problems.push(`(root): a driver's config check failed: ${(e as Error).message}`);
      }
    }
  }
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  // Relative data_dir: from the process's current directory (systemd sets it to /), documented in docs/config.md.
  config.gateway.data_dir = path.resolve(config.gateway.data_dir);
  return config;
}

/**
 * Validates a parsed config (not mutated). Throws ConfigError with every problem. Without `opts.models`, the
 * model library is read from board/models.
 */
export function validateConfig(raw: unknown, opts: ValidateOptions = {}): GatewayConfig {
  const library = opts.models ? libraryFromRecord(opts.models) : readModelLibrary();
  return validateWithLibrary(raw, library, opts.env ?? process.env, opts.checkers ?? []);
}

/** Parses a config file's text (not yet validated). Throws ConfigError for bad JSON, with line and column. */
export function parseConfigText(text: string): unknown {
  // Windows editors (the boot partition is FAT) may write a byte-order mark, which JSON.parse refuses.
  const clean = text.replace(/^\uFEFF/, '');
  try {
    return JSON.parse(clean) as unknown;
  } catch (e) {
    throw new ConfigError([`(root): ${describeJsonError(clean, e)}`]);
  }
}

/** Reads, parses and validates a config file. Throws ConfigError (also for a missing file or bad JSON). */
export async function loadConfigFile(file: string, opts: LoadOptions = {}): Promise<GatewayConfig> {
  return validateWithLibrary(parseConfigText(await readConfigText(file)), readModelLibrary(opts.modelsDir), opts.env ?? process.env, opts.checkers ?? []);
}

/** A config file's text; ConfigError when it cannot be read. */
export async function readConfigText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new ConfigError([`(root): cannot read config file ${file}: ${(e as Error).message}`]);
  }
}

/**
 * Devices with their models resolved, for the gateway to hand to drivers and the shadow. Throws ConfigError for
 * a device whose model is missing, unless `skipUnresolved` (for config checkers, which run while such a problem
 * is already being reported).
 */
/** A guarded point is read-only unless a device unlocks it (a wrong unit id or baud rate strands the device). */
const guard = (p: PointConfig): PointConfig => (p.guarded && p.access !== 'R' ? { ...p, access: 'R' } : p);

function unlock(model: ModelConfig, names: readonly string[]): ModelConfig {
  const open = new Set(names);
  return { ...model, points: model.points.map((p) => (p.guarded && open.has(p.name) ? p : guard(p))) };
}

export function resolveDevices(config: GatewayConfig, opts: { skipUnresolved?: boolean } = {}): ResolvedDevice[] {
  const out: ResolvedDevice[] = [];
  // One point index per model, shared by its devices: a fleet of identical meters costs one map, not N.
  const indexes = new Map<ModelConfig, Map<string, PointConfig>>();
  for (const device of config.devices) {
    const model = Object.hasOwn(config.models, device.model) ? config.models[device.model] : undefined;
    if (!model) {
      if (opts.skipUnresolved) continue;
      throw new ConfigError([`devices: unknown model "${device.model}" for device "${device.id}"`]);
    }
    let points = indexes.get(model);
    if (!points) indexes.set(model, (points = new Map<string, PointConfig>(model.points.map((p) => [p.name, guard(p)]))));
    // A device that unlocks guarded points gets its own copy of the model with those points writable.
    const unlocked = device.unlock_writes?.length ? unlock(model, device.unlock_writes) : null;
    if (unlocked) out.push({ config: device, model: unlocked, points: new Map(unlocked.points.map((p) => [p.name, p])), ttl: device.ttl ?? config.shadow.default_ttl });
    else out.push({ config: device, model, points, ttl: device.ttl ?? config.shadow.default_ttl });
  }
  return out;
}
