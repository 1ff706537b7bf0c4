/**
 * Which config the gateway runs on after a boot, and storing it on the data partition: the user's file when
 * it validates, else the last good one, else the image's default. A broken edit on the boot partition must
 * never cost a working gateway, and a first boot with a broken file must still bring up REST to say why.
 */
import { createHash } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { BootStatus } from '../config/boot-status.js';
import { ConfigError, parseConfigText, validateConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { atomicWriteFile, removeStaleTmp } from '../util/atomic-file.js';
import { ensureToken, hasTokens, readToken, withToken } from './boot-token.js';

export interface ApplyOptions {
  source: string;
  dir: string;
  fallback: string;
  /** Group of config.json (and the directory), when running as root and the group exists. */
  gid?: number;
  now?: Date;
}

export interface ApplyResult {
  status: BootStatus;
  /** The applied config, validated (defaults filled); undefined when nothing was usable. */
  config?: GatewayConfig;
  /** The token, when it is boot-config's own (for the console only). */
  token?: string;
}

export const dirFiles = (dir: string) => ({
  config: path.join(dir, 'config.json'),
  sha: path.join(dir, 'source.sha256'),
  token: path.join(dir, 'api-token'),
  status: path.join(dir, 'status.json'),
});

interface ReadConfig {
  raw?: Record<string, unknown>;
  config?: GatewayConfig;
  sha256: string | null;
  problems: string[];
}

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Reads and validates a config file as check-config does. The file's SHADOWGATE_* overrides are left out
 * (env {}): the file is judged as written, and the gateway's unit applies its own overrides at run time.
 */
async function readConfig(file: string): Promise<ReadConfig> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    return { sha256: null, problems: [`(root): cannot read ${file}: ${(e as Error).message}`] };
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  try {
    const raw = parseConfigText(bytes.toString('utf8'));
    const config = validateConfig(raw, { env: {} });
    return { raw: raw as Record<string, unknown>, config, sha256, problems: [] };
  } catch (e) {
    if (e instanceof ConfigError) return { sha256, problems: e.problems };
    throw e;
  }
}

interface Written { config: GatewayConfig; token?: string; changed: boolean }

/** Stores `raw` (as the user wrote it, plus the generated token when it sets none) as config.json. */
async function store(raw: Record<string, unknown>, sha256: string | null, opts: ApplyOptions): Promise<Written> {
  const files = dirFiles(opts.dir);
  let doc = raw;
  let token: string | undefined;
  if (hasTokens(raw)) {
    // The stored token would no longer open the API; a file that says otherwise misleads.
    await rm(files.token, { force: true });
  } else {
    token = await ensureToken(files.token);
    doc = withToken(raw, token);
  }
  const config = validateConfig(doc, { env: {} });
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  // Rewritten only when its bytes change (a new source, a new token, a lost file): the data partition is flash.
  const changed = (await readText(files.config)) !== text;
  if (changed) await atomicWriteFile(files.config, text, { mode: 0o640, ...(opts.gid === undefined ? {} : { gid: opts.gid }) });
  // source.sha256 names the source config.json came from; none when it came from the fallback.
  if (sha256 === null) await rm(files.sha, { force: true });
  else if ((await readText(files.sha))?.trim() !== sha256) await atomicWriteFile(files.sha, `${sha256}\n`);
  return { config, ...(token === undefined ? {} : { token }), changed };
}

const count = (n: number): string => `${n} problem${n === 1 ? '' : 's'}`;

async function prepareDir(opts: ApplyOptions): Promise<void> {
  await mkdir(opts.dir, { recursive: true, mode: 0o750 });
  // The gateway (group shadowgate) must reach config.json and status.json; api-token stays 0600 root.
  if (opts.gid !== undefined) {
    await chown(opts.dir, -1, opts.gid);
    await chmod(opts.dir, 0o750);
  }
  await removeStaleTmp(opts.dir);
}

export async function applyConfig(opts: ApplyOptions): Promise<ApplyResult> {
  await prepareDir(opts);
  const files = dirFiles(opts.dir);
  const base = { at: (opts.now ?? new Date()).toISOString(), source: opts.source };
  const src = await readConfig(opts.source);
  if (src.raw && src.config) {
    const w = await store(src.raw, src.sha256, opts);
    const message = `${opts.source} is valid${w.changed ? ' and applied' : ', unchanged'}`;
    return result({ ...base, ok: true, sha256: src.sha256, applied: 'source', message, problems: [] }, w);
  }
  const why = src.sha256 === null ? `${opts.source} cannot be read` : `${opts.source} is invalid (${count(src.problems.length)})`;
  const failed = { ...base, ok: false, sha256: src.sha256, problems: src.problems };

  const last = await readConfig(files.config);
  if (last.config) {
    const stored = await readToken(files.token);
    const tokens = last.config.http.auth.tokens;
    const kind = stored && tokens.includes(stored) ? 'generated' : tokens.length > 0 ? 'config' : 'none';
    return {
      status: ordered({ ...failed, applied: 'last-good', message: `${why}; the gateway runs on the last good config`, token: kind }),
      config: last.config,
      ...(kind === 'generated' && stored ? { token: stored } : {}),
    };
  }

  // A last good config that no longer validates (e.g. after an update) would keep the gateway down: replace it.
  const fb = await readConfig(opts.fallback);
  if (fb.raw && fb.config) {
    const w = await store(fb.raw, null, opts);
    const lastGood = last.sha256 === null ? 'there is no last good config' : 'the last good config no longer validates';
    const message = `${why} and ${lastGood}; the gateway runs on the default config ${opts.fallback}`;
    return result({ ...failed, applied: 'fallback', message }, w);
  }
  const message = `${why}, and neither a last good config nor the default ${opts.fallback} is usable; the gateway cannot start`;
  const problems = [...src.problems, ...fb.problems.map((p) => `${opts.fallback}: ${p}`)];
  return { status: ordered({ ...failed, problems, applied: null, message, token: 'none' }) };
}

function result(status: Omit<BootStatus, 'token'>, w: Written): ApplyResult {
  return {
    status: ordered({ ...status, token: w.token === undefined ? 'config' : 'generated' }),
    config: w.config,
    ...(w.token === undefined ? {} : { token: w.token }),
  };
}

/** The documented key order, so status.json reads the same on every boot. */
const ordered = (s: BootStatus): BootStatus => ({
  ok: s.ok, at: s.at, source: s.source, sha256: s.sha256, applied: s.applied, message: s.message, problems: s.problems, token: s.token,
});
