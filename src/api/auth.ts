/**
 * Bearer-token check: with tokens configured, writes need one (reads too with protect_reads); without
 * tokens the API is open (DESIGN §4). `read_tokens` pass reads only. Tokens are compared in constant time
 * over their SHA-256 digests, so neither the content nor the length of a configured token leaks through
 * timing. A browser cannot set headers on a WebSocket, so the event stream also takes `?token=`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../config/types.js';
import { HttpError } from './envelope.js';

/** `admin`: reads that reveal secrets (the whole config with its tokens): the write scope. */
export type Access = 'read' | 'write' | 'admin';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

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

export interface AuthChecker {
  /** Throws a 401 HttpError when the request may not do `access`. */
  (req: IncomingMessage, access: Access, opts?: { allowQuery?: boolean }): void;
  /** Whether tokens are configured at all (the console says so). */
  readonly enabled: boolean;
  /** Whether this request holds the write scope (no tokens: everyone does). */
  canWrite(req: IncomingMessage): boolean;
}

export function createAuth(cfg: GatewayConfig['http']['auth']): AuthChecker {
  const writers = cfg.tokens.filter((t) => t.length > 0).map(digest);
  const readers = (cfg.read_tokens ?? []).filter((t) => t.length > 0).map(digest);
  const open = writers.length === 0;
  const scopeOf = (req: IncomingMessage, allowQuery: boolean): 'none' | 'read' | 'write' | 'bad' => {
    const token = tokenOf(req, allowQuery);
    if (token === undefined) return 'none';
    const given = digest(token);
    if (anyMatch(given, writers)) return 'write';
    return anyMatch(given, readers) ? 'read' : 'bad';
  };
  const check = (req: IncomingMessage, access: Access, opts: { allowQuery?: boolean } = {}): void => {
    if (open || (access === 'read' && !cfg.protect_reads)) return;
    const scope = scopeOf(req, opts.allowQuery ?? false);
    if (scope === 'none') {
      throw new HttpError(401, 'authorization required: send Authorization: Bearer <token>', {
        'WWW-Authenticate': 'Bearer realm="shadowgate"',
      });
    }
    if (scope === 'bad') {
      throw new HttpError(401, 'invalid token', { 'WWW-Authenticate': 'Bearer realm="shadowgate", error="invalid_token"' });
    }
    if (scope === 'read' && access !== 'read') {
      throw new HttpError(401, 'this token may only read', { 'WWW-Authenticate': 'Bearer realm="shadowgate", error="insufficient_scope"' });
    }
  };
  return Object.assign(check, {
    enabled: !open,
    canWrite: (req: IncomingMessage) => open || scopeOf(req, false) === 'write',
  });
}
