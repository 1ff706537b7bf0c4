/**
 * The API token `boot-config` adds when the user set none: an image flashed from the internet must not come
 * up with an open REST API that can switch relays. It is kept in a root-only file so it survives reboots and
 * config edits (clients keep working), and is shown only on the physical console.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isObj } from '../config/model-checks.js';
import { atomicWriteFile } from '../util/atomic-file.js';

// http.auth.tokens needs at least 8 characters; whitespace would not survive an Authorization header.
const USABLE = /^[\x21-\x7e]{8,}$/;

/** 24 random bytes: 192 bits, 32 base64url characters (no padding, safe in headers and URLs). */
export const newToken = (): string => randomBytes(24).toString('base64url');

/** The token stored in `file`, or undefined when there is none (or it is unusable). */
export async function readToken(file: string): Promise<string | undefined> {
  try {
    const token = (await readFile(file, 'utf8')).trim();
    return USABLE.test(token) ? token : undefined;
  } catch {
    return undefined;
  }
}

/** The stored token, or a new one written to `file` (0600) first. */
export async function ensureToken(file: string): Promise<string> {
  const stored = await readToken(file);
  if (stored) return stored;
  const token = newToken();
  await atomicWriteFile(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/** Whether the user set tokens (http.auth.tokens non-empty) in a parsed config. */
export function hasTokens(raw: Record<string, unknown>): boolean {
  const auth = isObj(raw.http) ? raw.http.auth : undefined;
  return isObj(auth) && Array.isArray(auth.tokens) && auth.tokens.length > 0;
}

/** A copy of `raw` with `http.auth.tokens` = [token]; the user's other keys and their order stay. */
export function withToken(raw: Record<string, unknown>, token: string): Record<string, unknown> {
  const http = isObj(raw.http) ? raw.http : {};
  const auth = isObj(http.auth) ? http.auth : {};
  return { ...raw, http: { ...http, auth: { ...auth, tokens: [token] } } };
}
