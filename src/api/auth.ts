/**
 * Bearer-token check: with tokens configured, writes need one (reads too with protect_reads); without
 * tokens the API is open (DESIGN §4). Tokens are compared in constant time over their SHA-256 digests,
 * so neither the content nor the length of a configured token leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../config/types.js';
import { HttpError } from './envelope.js';

export type Access = 'read' | 'write';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Returns a checker that throws a 401 HttpError when the request may not do `access`. */
export function createAuth(cfg: GatewayConfig['http']['auth']): (req: IncomingMessage, access: Access) => void {
  const tokens = cfg.tokens.filter((t) => t.length > 0).map(digest);
  const open = tokens.length === 0;
  return (req, access) => {
    if (open || (access === 'read' && !cfg.protect_reads)) return;
    const header = req.headers.authorization ?? '';
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (!match) {
      throw new HttpError(401, 'authorization required: send Authorization: Bearer <token>', {
        'WWW-Authenticate': 'Bearer realm="shadowgate"',
      });
    }
    const given = digest(match[1]!);
    let ok = false;
    // No early exit: every configured token is compared.
    for (const t of tokens) ok = timingSafeEqual(given, t) || ok;
    if (!ok) {
      throw new HttpError(401, 'invalid token', { 'WWW-Authenticate': 'Bearer realm="shadowgate", error="invalid_token"' });
    }
  };
}
