/**
 * A small request-body reader (we do not use @polka/parse: over its limit it keeps reading and calls
 * next(err) once per chunk — notes/packages.md §6). Over the limit we stop at once and answer 413; the
 * envelope writer then closes the connection so the rest is never read.
 */
import type { IncomingMessage } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { badRequest } from '../core/errors.js';
import { HttpError } from './envelope.js';
import { fromBrowser } from './site.js';

export type Fields = Record<string, unknown>;

export const tooLarge = (limit: number): HttpError =>
  new HttpError(413, `request body too large: limit is ${limit} bytes`);

/** Content-Length alone already tells: refuse before reading a byte. */
export function declaredTooLarge(req: IncomingMessage, limit: number): boolean {
  const len = Number(req.headers['content-length']);
  return Number.isFinite(len) && len > limit;
}

function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (declaredTooLarge(req, limit)) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(new HttpError(400, `request body could not be read: ${err.message}`));
    };
    // The client went away before the body ended: nothing to answer, but do not leave the promise hanging.
    const onClose = (): void => {
      if (req.complete) return;
      cleanup();
      reject(new HttpError(400, 'request body incomplete'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

const looksLikeJson = (text: string): boolean => /^\s*[[{"]/.test(text);

const unsupportedType = (type: string, why = ''): HttpError =>
  new HttpError(415, `unsupported content type: ${type.slice(0, 100) || '(none)'}${why} (use application/json, or application/x-www-form-urlencoded for form fields)`);

/**
 * The body as an object of fields, or undefined when there is none: JSON from `application/json` (or
 * `+json`), form fields from `application/x-www-form-urlencoded`. Other types are 415. JSON text labelled
 * as a form or not labelled is read as JSON only from clients that are not browsers (`curl -d '{...}'`
 * labels JSON as a form, Python requests sends none): a page can send exactly those without asking the
 * gateway first (a form, or fetch of a Blob), so from a browser they are refused, as `text/plain` always is.
 * A body that is not an object (array, string, number) is refused with a clear message.
 */
export async function readFields(req: IncomingMessage, limit: number): Promise<Fields | undefined> {
  const raw = await readRaw(req, limit);
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const isJsonType = type === 'application/json' || type.endsWith('+json');
  const isFormType = type === 'application/x-www-form-urlencoded';
  if (!isJsonType && !isFormType && type !== '') throw unsupportedType(type);
  if (isJsonType || looksLikeJson(text)) {
    if (!isJsonType && fromBrowser(req)) throw unsupportedType(type, ' for a JSON body from a browser');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw badRequest(`invalid JSON body: ${err instanceof Error ? err.message : 'parse error'}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw badRequest('request body must be a JSON object');
    }
    return parsed as Fields;
  }
  return { ...parseQuery(text) };
}
