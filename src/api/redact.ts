/**
 * Secrets of the config (tokens, password hashes, the bridge password, the Wi-Fi passphrase, a URL with a
 * password in it) never leave the gateway, not even to the write token: GET /config shows each as a
 * placeholder naming where it is, `"<secret http.auth.tokens[0]>"`, and a config sent back (PUT /config,
 * validate) gets each placeholder replaced by the running value at that place, so the console's download,
 * edit and upload round trip keeps them. A placeholder whose place holds no secret is refused: a backup
 * restored on another gateway must have its secrets written in.
 */
import { ConfigError } from '../config/load.js';

type Json = unknown;

/** Where secrets live, as paths with `*` for any array index. */
const SECRET_PATHS = [
  'http.auth.tokens.*', 'http.auth.read_tokens.*', 'mqtt.users.*.password_hash', 'mqtt.bridge.password', 'system.wifi.psk',
];
/** URLs that may carry `user:password@`. */
const URL_PATHS = ['mqtt.bridge.url', 'export.shadow.http.url'];

const PLACEHOLDER = /^<secret ([A-Za-z0-9_.[\]]+)>$/;

const isObj = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const matches = (pattern: string, path: string[]): boolean => {
  const parts = pattern.split('.');
  return parts.length === path.length && parts.every((p, i) => p === '*' || p === path[i]);
};
const shown = (path: string[]): string => path.reduce((s, p) => (/^\d+$/.test(p) ? `${s}[${p}]` : s ? `${s}.${p}` : p), '');
const hasUrlPassword = (v: string): boolean => /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]*@/i.test(v);

function isSecret(path: string[], value: Json): boolean {
  if (typeof value !== 'string' || value === '') return false;
  if (SECRET_PATHS.some((p) => matches(p, path))) return true;
  return URL_PATHS.some((p) => matches(p, path)) && hasUrlPassword(value);
}

// Secrets sit at most 4 levels deep; a body nested thousands deep is left to the validator, not recursed into.
const MAX_DEPTH = 8;

function walk(value: Json, path: string[], fn: (v: Json, path: string[]) => Json): Json {
  if (path.length > MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, String(i)], fn));
  // fromEntries defines own properties: a "__proto__" key from JSON stays a key (and is refused by the schema).
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k], fn)]));
  return fn(value, path);
}

/** A copy of the config with every secret replaced by its placeholder. */
export function redactConfig(config: Json): Json {
  return walk(config, [], (v, path) => (isSecret(path, v) ? `<secret ${shown(path)}>` : v));
}

/** The value at a shown path (`mqtt.users[1].password_hash`) of the running config, when it is a secret. */
function secretAt(config: Json, where: string): string | undefined {
  const path = where.replace(/\[(\d+)\]/g, '.$1').split('.').filter(Boolean);
  let at: Json = config;
  for (const p of path) at = Array.isArray(at) || isObj(at) ? (at as Record<string, Json>)[p] : undefined;
  return isSecret(path, at) ? (at as string) : undefined;
}

/** A config sent back with placeholders: each replaced by the running config's secret at its place (else ConfigError). */
export function restoreSecrets(incoming: Json, running: Json): Json {
  const missing: string[] = [];
  const out = walk(incoming, [], (v) => {
    const m = typeof v === 'string' ? PLACEHOLDER.exec(v) : null;
    if (!m) return v;
    const secret = secretAt(running, m[1]!);
    if (secret === undefined) missing.push(m[1]!);
    return secret ?? v;
  });
  if (missing.length > 0) throw new ConfigError(missing.map((m) => `${m}: a redacted secret with nothing to keep (write the value itself)`));
  return out;
}
