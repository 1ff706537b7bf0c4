/**
 * MQTT users and the publish ACL.
 *
 * Password hash format (what `shadowgate hash-password` prints, stored in `mqtt.users[].password_hash`):
 *   `scrypt$<N>$<r>$<p>$<salt base64>$<key base64>`
 * scrypt from node:crypto, 32-byte key, 16-byte random salt, defaults N=16384 r=8 p=1 (16 MiB, ~50 ms on a
 * Pi 4: slow enough to make guessing costly, fast enough for a connect).
 */
import { randomBytes, scrypt, timingSafeEqual, createHash } from 'node:crypto';
import type { Topics } from './topics.js';

export const SCRYPT_DEFAULTS = { N: 16384, r: 8, p: 1 } as const;
const KEY_LEN = 32;
// A hash from a config file must not be able to make a connect allocate gigabytes.
const MAX_N = 1 << 17;

export interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

function scryptAsync(password: string, salt: Buffer, keylen: number, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keylen, { N, r, p, maxmem: 256 * N * r * p + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** Parses a stored hash; throws with a message naming the problem (reported at start for `mqtt.users`). */
export function parseHash(text: string): ParsedHash {
  const parts = text.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    throw new Error('password_hash must look like scrypt$N$r$p$salt$key (run `shadowgate hash-password`)');
  }
  const [, n, r, p, salt, key] = parts as [string, string, string, string, string, string];
  const N = Number(n);
  const R = Number(r);
  const P = Number(p);
  if (!Number.isInteger(N) || N < 2 || N > MAX_N || (N & (N - 1)) !== 0) {
    throw new Error(`password_hash: N must be a power of two from 2 to ${MAX_N}`);
  }
  if (!Number.isInteger(R) || R < 1 || R > 32 || !Number.isInteger(P) || P < 1 || P > 16) {
    throw new Error('password_hash: r must be 1..32 and p 1..16');
  }
  const saltBuf = Buffer.from(salt, 'base64');
  const keyBuf = Buffer.from(key, 'base64');
  if (saltBuf.length < 8 || keyBuf.length < 16) throw new Error('password_hash: salt or key too short');
  return { N, r: R, p: P, salt: saltBuf, key: keyBuf };
}

export async function hashPassword(password: string, opts: { N?: number; r?: number; p?: number } = {}): Promise<string> {
  const N = opts.N ?? SCRYPT_DEFAULTS.N;
  const r = opts.r ?? SCRYPT_DEFAULTS.r;
  const p = opts.p ?? SCRYPT_DEFAULTS.p;
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, KEY_LEN, N, r, p);
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, hash: ParsedHash): Promise<boolean> {
  const key = await scryptAsync(password, hash.salt, hash.key.length, hash.N, hash.r, hash.p);
  return timingSafeEqual(key, hash.key);
}

/** Who a connected client is. The bridge is the upstream side's `set` path: trusted as a writer. */
export type Principal =
  | { kind: 'anonymous' }
  | { kind: 'user'; username: string; canWrite: boolean }
  | { kind: 'bridge' };

export interface UserConfig {
  username: string;
  password_hash: string;
  can_write: boolean;
}

/** Checks credentials; keeps a small cache of recent successes so reconnect storms do not burn CPU on scrypt. */
export class UserDirectory {
  private readonly users = new Map<string, { hash: ParsedHash; canWrite: boolean }>();
  private readonly okCache = new Map<string, string>();

  /** Throws on a malformed hash, naming the user (the config is reported at start). */
  constructor(users: readonly UserConfig[], readonly allowAnonymous: boolean) {
    users.forEach((u, i) => {
      try {
        this.users.set(u.username, { hash: parseHash(u.password_hash), canWrite: u.can_write });
      } catch (err) {
        throw new Error(`mqtt.users[${i}] (${u.username}): ${(err as Error).message}`);
      }
    });
  }

  /** `null` = refused (bad user name or password, or anonymous not allowed). */
  async authenticate(username: string | undefined, password: Buffer | undefined): Promise<Principal | null> {
    if (username === undefined || username === '') {
      return this.allowAnonymous && !password ? { kind: 'anonymous' } : null;
    }
    const user = this.users.get(username);
    if (!user || !password) return null;
    const pw = password.toString('utf8');
    const digest = createHash('sha256').update(pw).digest('base64');
    let ok = this.okCache.get(username) === digest;
    if (!ok) {
      ok = await verifyPassword(pw, user.hash);
      if (ok) {
        if (this.okCache.size >= 64) this.okCache.delete(this.okCache.keys().next().value as string);
        this.okCache.set(username, digest);
      }
    }
    return ok ? { kind: 'user', username, canWrite: user.canWrite } : null;
  }
}

/**
 * The publish ACL. Returns `null` when allowed, else the reason (the broker drops the message and logs it).
 * Rules:
 * - anonymous clients (when `allow_anonymous`) publish exactly one topic, and only with discovery on:
 *   Home Assistant's birth and will, `<prefix>/status`. HA connects without a login by default and
 *   announces itself on the connection it subscribes with; the birth makes the gateway send its configs;
 * - under `<base>/` a client may publish only to `<base>/<device>/set`, and only with `can_write`
 *   (state, availability, events, bridge state, shadow and set results are the gateway's: no spoofing);
 * - discovery configs for this gateway's devices (`<prefix>/<component>/<gateway>_…`) are the gateway's;
 * - users may publish elsewhere (HA's birth message, Node-RED flows).
 */
export function checkPublish(
  principal: Principal,
  topic: string,
  topics: Topics,
  discovery?: { prefix: string; nodePrefix: string },
): string | null {
  if (principal.kind === 'anonymous') {
    if (discovery && topic === haStatusTopic(discovery.prefix)) return null;
    return discovery
      ? `anonymous clients may publish only ${haStatusTopic(discovery.prefix)}`
      : 'anonymous clients are read only';
  }
  if (topics.owns(topic)) {
    const parsed = topics.parse(topic);
    if (parsed?.kind !== 'set') return `topic ${topic} belongs to the gateway`;
    if (principal.kind === 'user' && !principal.canWrite) return `user ${principal.username} may not write`;
    return null;
  }
  if (discovery && topic.startsWith(`${discovery.prefix}/`)) {
    const node = topic.split('/')[2] ?? '';
    // Its devices' configs (`<gateway>_<device>`) and its own (`<gateway>`, the gateway's HA device).
    if (node.startsWith(discovery.nodePrefix) || `${node}_` === discovery.nodePrefix) return `topic ${topic} belongs to the gateway`;
  }
  return null;
}

/** Where Home Assistant publishes its birth (`online`) and will (`offline`). */
export const haStatusTopic = (prefix: string): string => `${prefix}/status`;

/**
 * The subscribe ACL. Returns `null` when allowed, else the reason (SUBACK 128, the connection stays).
 * Users subscribe to anything. Anonymous clients (when `allow_anonymous`) read what the gateway publishes —
 * `<base>/…`, and with discovery on `<prefix>/…` — but not what users publish to one another elsewhere
 * (a Node-RED flow's topics are not for guests), nor `$SYS`.
 */
export function checkSubscribe(
  principal: Principal,
  filter: string,
  topics: Topics,
  discovery?: { prefix: string },
): string | null {
  if (principal.kind !== 'anonymous') return null;
  const within = (root: string): boolean => filter === root || filter.startsWith(`${root}/`);
  if (within(topics.base) || (discovery && within(discovery.prefix))) return null;
  return 'anonymous clients may subscribe only to the gateway\'s topics';
}
