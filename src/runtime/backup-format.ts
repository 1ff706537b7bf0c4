/**
 * The backup file: a gzip'd tar (any tar tool lists it) of, in this order,
 *   manifest.json   what it is: format, format version, gateway version and id, created (wall time, for people)
 *   config.json     the running configuration, its API tokens as their SHA-256 (`sha256:<hex>`)
 *   versions.json   the configuration versions (rollback points), tokens the same way
 *   history/…       the history files, when asked for
 * gzip's CRC and length trailer and tar's end blocks make a truncated or damaged file fail to read, so it is
 * refused whole. Other secrets of the config (bridge password, Wi-Fi passphrase) are in it as they are: the
 * file is kept like a password, and its download needs the write token.
 */
import type { ConfigVersion } from './config-store.js';
import { hashToken } from '../util/token-hash.js';

export const FORMAT = 'shadowgate-backup';
/** Raised when the layout changes so that an older gateway could not read it; a newer file is refused. */
export const FORMAT_VERSION = 1;

export const ENTRY = { manifest: 'manifest.json', config: 'config.json', versions: 'versions.json', history: 'history/' } as const;

/** Largest JSON entry read into memory (a config with 1,000 devices is ~200 kB; 20 versions of it 4 MB). */
export const MAX_JSON_BYTES = 32 * 1024 * 1024;

export interface Manifest {
  format: typeof FORMAT;
  format_version: number;
  gateway_version: string;
  gateway_id: string;
  /** Wall time the file was made, ISO 8601 (for people; nothing is judged on it). */
  created: string;
  history: boolean;
  config_versions: number;
  /** The API tokens the file carries, as hashes: restoring it makes these tokens work. */
  token_hashes: string[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A copy of a raw config whose `http.auth` tokens are hashes, with `extra` tokens added as hashes (each once, in order). */
export function withHashedTokens(raw: unknown, extra: { tokens: string[]; read_tokens: string[] } = { tokens: [], read_tokens: [] }): unknown {
  if (!isObj(raw)) return raw;
  const http = isObj(raw.http) ? raw.http : undefined;
  const auth = http && isObj(http.auth) ? http.auth : undefined;
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string').map(hashToken) : []);
  const tokens = [...new Set([...list(auth?.tokens), ...extra.tokens.map(hashToken)])];
  const readTokens = [...new Set([...list(auth?.read_tokens), ...extra.read_tokens.map(hashToken)])];
  if (!auth && tokens.length === 0 && readTokens.length === 0) return structuredClone(raw);
  const nextAuth: Record<string, unknown> = { ...(auth ?? {}), tokens };
  if (readTokens.length > 0 || auth?.read_tokens !== undefined) nextAuth.read_tokens = readTokens;
  return { ...structuredClone(raw), http: { ...(http ?? {}), auth: nextAuth } };
}

/** The tokens of a raw config as written (a restore keeps them working beside the backup's). */
export function tokensOf(raw: unknown): { tokens: string[]; read_tokens: string[] } {
  const auth = isObj(raw) && isObj(raw.http) && isObj(raw.http.auth) ? raw.http.auth : {};
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string') : []);
  return { tokens: list(auth.tokens), read_tokens: list(auth.read_tokens) };
}

/** The write tokens of a raw config, hashed (the manifest's list). */
export function tokenHashesOf(raw: unknown): string[] {
  const hashed = withHashedTokens(raw);
  const auth = isObj(hashed) && isObj(hashed.http) && isObj(hashed.http.auth) ? hashed.http.auth : {};
  return Array.isArray(auth.tokens) ? (auth.tokens as string[]) : [];
}

/** Checks a manifest read from a file; returns it or throws with what is wrong. */
export function checkManifest(value: unknown): Manifest {
  if (!isObj(value) || value.format !== FORMAT) throw new Error('not a shadowgate backup (its manifest.json does not say so)');
  const v = value.format_version;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error('the manifest has no valid format_version');
  if (v > FORMAT_VERSION) {
    throw new Error(`the backup has format version ${v}, made by shadowgate ${String(value.gateway_version)}; this gateway reads up to ${FORMAT_VERSION}: update it first`);
  }
  if (typeof value.history !== 'boolean') throw new Error('the manifest does not say whether it holds history');
  return value as unknown as Manifest;
}

/** Checks versions.json: every entry a configuration version. */
export function checkVersions(value: unknown): ConfigVersion[] {
  if (!Array.isArray(value)) throw new Error('versions.json is not a list');
  return value.map((v, i) => {
    if (!isObj(v) || !Number.isInteger(v.version) || (v.version as number) < 1 || typeof v.time !== 'number' || typeof v.summary !== 'string' || !('raw' in v)) {
      throw new Error(`versions.json entry ${i} is not a configuration version`);
    }
    return v as unknown as ConfigVersion;
  });
}

/** A history entry's path below history/, or why it is refused (no way out of the directory, no odd names). */
export function historyPath(name: string): string {
  const rel = name.slice(ENTRY.history.length);
  const parts = rel.split('/').filter((p) => p !== '');
  if (parts.length === 0 || parts.some((p) => p === '.' || p === '..' || !/^[A-Za-z0-9._-]+$/.test(p))) {
    throw new Error(`the backup holds an entry with an unsafe name: ${JSON.stringify(name.slice(0, 120))}`);
  }
  return parts.join('/');
}
