/**
 * Bearer-token check: with tokens configured, writes need one (reads too with protect_reads); without
 * tokens the API is open (DESIGN §4). `read_tokens` pass reads only. A configured entry may be a token's
 * SHA-256 (`sha256:<hex>`, as a restored backup has them). Tokens are compared in constant time over their
 * SHA-256 digests, so neither the content nor the length of a configured token leaks through timing. A browser cannot set headers on a WebSocket, so the event stream also takes `?token=`.
 * Guessing is slowed per source address (src/util/auth-backoff.ts): a wrong token's 401 is held, and while
 * a source is blocked its tokens are not judged at all (429).
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../config/types.js';
import { FailureBackoff, sourceKey } from '../util/auth-backoff.js';
import { entryDigest, tokenDigest } from '../util/token-hash.js';
import { HttpError } from './envelope.js';

/** `admin`: reads that reveal secrets (the whole config with its tokens): the write scope. */
export type Access = 'read' | 'write' | 'admin';

const anyMatch = (given: Buffer, list: readonly Buffer[]): boolean => {
  let ok = false;
  // No early exit: every configured token is compared.
  for (const t of list) ok = timingSafeEqual(given, t) || ok;
  return ok;
};

function tokenOf(req: IncomingMessage, allowQuery: boolean): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
  if (match) return match[1];
  if (!allowQuery) return undefined;
  const q = (req.url ?? '').indexOf('?');
  return q < 0 ? undefined : new URLSearchParams(req.url!.slice(q + 1)).get('token') ?? undefined;
}

type AuthConfig = GatewayConfig['http']['auth'];

// The REST app and the HTTP part's /metrics and event-stream check each build a checker from the same
// config object: they share one failure table, so a guesser cannot switch doors to escape the backoff.
const tables = new WeakMap<AuthConfig, FailureBackoff>();
const tableFor = (cfg: AuthConfig): FailureBackoff => {
  let t = tables.get(cfg);
  if (!t) tables.set(cfg, (t = new FailureBackoff()));
  return t;
};

const unauthorized = (message: string, error?: string, delayMs = 0): HttpError =>
  new HttpError(401, message, { 'WWW-Authenticate': `Bearer realm="shadowgate"${error ? `, error="${error}"` : ''}` }, delayMs);

export interface AuthChecker {
  /** Throws a 401 HttpError when the request may not do `access`. */
  (req: IncomingMessage, access: Access, opts?: { allowQuery?: boolean }): void;
  /** Whether tokens are configured at all (the console says so). */
  readonly enabled: boolean;
  /**
   * Whether this request holds the write scope (no tokens: everyone does). A token it carries is judged
   * like anywhere else: a wrong one throws 401 (held), a blocked source 429 — no oracle outside the backoff.
   */
  canWrite(req: IncomingMessage): boolean;
  /** The failure table (tests, stats). */
  readonly backoff: FailureBackoff;
}

export function createAuth(cfg: AuthConfig): AuthChecker {
  // An entry may be the token or its hash (`sha256:<hex>`, util/token-hash.ts): both are a digest here.
  const writers = cfg.tokens.filter((t) => t.length > 0).map(entryDigest);
  const readers = (cfg.read_tokens ?? []).filter((t) => t.length > 0).map(entryDigest);
  const open = writers.length === 0;
  const backoff = tableFor(cfg);
  /** The scope of the token sent: judged only when its source is not blocked; a wrong one counts as a failure. */
  const scopeOf = (req: IncomingMessage, allowQuery: boolean): 'none' | 'read' | 'write' => {
    const token = tokenOf(req, allowQuery);
    if (token === undefined) return 'none';
    const source = sourceKey(req.socket?.remoteAddress);
    const wait = backoff.wait(source);
    if (wait > 0) {
      const s = String(Math.ceil(wait / 1000));
      throw new HttpError(429, `too many failed attempts: retry in ${s} s`, { 'Retry-After': s });
    }
    const given = tokenDigest(token);
    if (anyMatch(given, writers)) {
      backoff.succeed(source);
      return 'write';
    }
    if (anyMatch(given, readers)) return 'read';
    throw unauthorized('invalid token', 'invalid_token', backoff.fail(source));
  };
  const check = (req: IncomingMessage, access: Access, opts: { allowQuery?: boolean } = {}): void => {
    if (open || (access === 'read' && !cfg.protect_reads)) return;
    const scope = scopeOf(req, opts.allowQuery ?? false);
    if (scope === 'none') throw unauthorized('authorization required: send Authorization: Bearer <token>');
    if (scope === 'read' && access !== 'read') throw unauthorized('this token may only read', 'insufficient_scope');
  };
  return Object.assign(check, {
    enabled: !open,
    canWrite: (req: IncomingMessage) => open || scopeOf(req, false) === 'write',
    backoff,
  });
}
