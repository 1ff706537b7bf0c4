/**
 * The response envelope `{success, errorCode, errorMsg, data}` and the ONE place errors become envelopes.
 * Handler results are HTTP 200 even on failure (clients of the upstream gateway check `success`, not
 * the status); only router/transport-level outcomes (401/404/405/413/400) carry their own HTTP status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isGatewayError } from '../core/errors.js';
import type { Logger } from '../util/logger.js';
import { drainable, drainThen } from './drain.js';

export interface Envelope {
  success: boolean;
  errorCode: number;
  errorMsg: string;
  data: unknown;
}

/**
 * An outcome outside the handlers, answered with its own HTTP status and `errorCode` equal to it;
 * `delayMs` holds the answer that long (a wrong token: src/util/auth-backoff.ts).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly delayMs = 0,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const okEnvelope = (data: unknown): Envelope => ({ success: true, errorCode: 200, errorMsg: '', data: data ?? null });
export const failEnvelope = (errorCode: number, errorMsg: string): Envelope => ({ success: false, errorCode, errorMsg, data: null });

/** Maps any thrown value to HTTP status + envelope. Unexpected errors are logged, never shown to the client. */
export function toErrorResponse(err: unknown, log: Logger): { status: number; envelope: Envelope; headers: Record<string, string> } {
  if (err instanceof HttpError) return { status: err.status, envelope: failEnvelope(err.status, err.message), headers: err.headers };
  // A refused configuration carries its problems (`data.errors`); every other failure has data null.
  if (isGatewayError(err)) return { status: 200, envelope: { ...failEnvelope(500, err.message), data: err.details ?? null }, headers: {} };
  log.error({ err }, 'unexpected error in REST handler');
  return { status: 200, envelope: failEnvelope(500, 'internal error'), headers: {} };
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Writes the envelope. When the request body has not been read to its end (an early 401/404/413, or a
 * handler that ignores bodies), a declared body up to `DRAIN_MAX` is read and discarded first (drain.ts);
 * a larger or streamed one is answered at once and the connection closed: Node would otherwise keep
 * reading whatever the client still sends, which for a huge body is the very thing the limit prevents.
 */
export function sendEnvelope(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  envelope: Envelope,
  headers: Record<string, string> = {},
  log?: Logger,
): void {
  if (!req.complete && !res.headersSent && drainable(req)) {
    drainThen(req, (drained) => {
      if (req.socket.destroyed) return; // the client went away meanwhile: nobody to answer
      writeEnvelope(req, res, status, envelope, drained ? headers : { ...headers, Connection: 'close' }, log);
    });
    return;
  }
  writeEnvelope(req, res, status, envelope, req.complete ? headers : { ...headers, Connection: 'close' }, log);
}

/** The ok envelope up to its `data`, as JSON.stringify(okEnvelope(…)) writes it. */
const OK_PREFIX = '{"success":true,"errorCode":200,"errorMsg":"","data":';

/**
 * sendEnvelope(req, res, 200, okEnvelope(data)) with the same bytes, on the hot path of every successful
 * route: the envelope is written around `data`'s JSON instead of being built as an object and serialised
 * whole. A request whose body is still unread, an answer under way, or data JSON cannot take go the
 * general way.
 */
export function sendOk(req: IncomingMessage, res: ServerResponse, data: unknown, log?: Logger): void {
  let json: string | undefined;
  if (req.complete && !res.headersSent && !res.writableEnded) {
    try {
      json = JSON.stringify(data ?? null);
    } catch {
      // sendEnvelope logs it and answers "internal error"
    }
  }
  if (json === undefined) {
    sendEnvelope(req, res, 200, okEnvelope(data), {}, log);
    return;
  }
  const body = `${OK_PREFIX}${json}}`;
  res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function writeEnvelope(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  envelope: Envelope,
  headers: Record<string, string>,
  log?: Logger,
): void {
  if (res.headersSent || res.writableEnded) {
    // A response is already under way: the only safe thing left is to drop the connection.
    req.socket.destroy();
    return;
  }
  let body: string;
  try {
    body = JSON.stringify(envelope);
  } catch (err) {
    // e.g. a BigInt or a cycle in a health report: still answer with an envelope.
    log?.error({ err }, 'REST response could not be serialised');
    status = 200;
    body = JSON.stringify(failEnvelope(500, 'internal error'));
  }
  // One writeHead with a plain object: Node's fast path (setHeader validates and stores each header).
  const head: Record<string, string | number> = { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body) };
  for (const k in headers) head[k] = headers[k]!;
  res.writeHead(status, head);
  res.end(body);
}
