/**
 * A bearer token may be configured as the SHA-256 of the token instead of the token itself:
 * `"sha256:<64 hex digits>"` in `http.auth.tokens` or `read_tokens`. A backup carries tokens in this form,
 * so restoring it makes the old token work again without the file holding the token. The tokens the
 * gateway makes are 192 random bits, so a fast hash is enough (GitHub keeps its tokens' SHA-256 the same
 * way); auth compares SHA-256 digests anyway, and a hashed entry is simply its digest.
 */
import { createHash } from 'node:crypto';

const HASHED = /^sha256:([0-9a-f]{64})$/;

/** The token's digest, the way auth compares it. */
export const tokenDigest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/** Whether a configured entry is a token's hash rather than a token. */
export const isTokenHash = (entry: string): boolean => HASHED.test(entry);

/** `sha256:<hex>` of a token; an entry that is already a hash stays as it is. */
export const hashToken = (entry: string): string => (isTokenHash(entry) ? entry : `sha256:${tokenDigest(entry).toString('hex')}`);

/** The digest a configured entry stands for: the hash it spells, or the digest of the token it is. */
export function entryDigest(entry: string): Buffer {
  const m = HASHED.exec(entry);
  return m ? Buffer.from(m[1]!, 'hex') : tokenDigest(entry);
}
