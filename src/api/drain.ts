/**
 * Reading the rest of a body we will not use before answering it (an early 413, 401, 404).
 *
 * A client that writes its whole body before it reads (Node's http client, Python requests, curl without
 * `Expect`) is still sending when an early answer goes out. If the connection then closes with body bytes
 * unread — Node closes it after the answer when the client asked `Connection: close`, as Node's client
 * does without a keep-alive agent — the kernel resets it, and the client sees EPIPE/ECONNRESET instead of
 * the answer (seen in about 1 run of 2 on a loaded machine). Answering first and draining after cannot
 * fix that case: Node destroys the socket as soon as the answer is written. So a declared body up to
 * `DRAIN_MAX` is read and thrown away first (nothing is buffered), for at most `DRAIN_MS`; then the answer
 * goes out on a connection with nothing left unread. A larger declared body or a streamed one (no
 * Content-Length) is answered at once with `Connection: close`: reading it is what the limit prevents.
 */
import type { IncomingMessage } from 'node:http';

export const DRAIN_MAX = 4 * 1024 * 1024;
export const DRAIN_MS = 5000;

/** A declared body, small enough to read, that nothing has started reading. */
export function drainable(req: IncomingMessage): boolean {
  const len = Number(req.headers['content-length']);
  // readableFlowing null: nothing of the body was read (a reader that stopped at the limit paused it).
  return Number.isFinite(len) && len <= DRAIN_MAX && req.readableFlowing === null;
}

/**
 * Reads and discards the rest of the body, then calls `then(true)`; `then(false)` when `DRAIN_MS` passed
 * first (a client that declared a body and sends it slowly or not at all: answer, and the connection closes).
 * Nothing is called when the client goes away meanwhile.
 */
export function drainThen(req: IncomingMessage, then: (drained: boolean) => void): void {
  let settled = false;
  const finish = (drained: boolean | null): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    req.off('end', onEnd);
    req.off('close', onClose);
    if (drained !== null) then(drained);
  };
  const onEnd = (): void => finish(true);
  const onClose = (): void => finish(req.complete ? true : null);
  const timer = setTimeout(() => finish(false), DRAIN_MS);
  timer.unref();
  req.on('end', onEnd);
  req.on('close', onClose);
  req.on('error', () => { /* a reset mid-body: 'close' follows */ });
  req.resume();
}
