/**
 * Large uploads (an update bundle, a backup to restore) outlive the server's limit on a whole request's time
 * (server.ts: 30 s, which guards a Pi's few sockets against slow clients): 300 MB over a 20 Mbit/s link takes
 * two minutes. Such a body is exempt from that limit while it is read here, and is instead cut off when no
 * byte arrives for `STALL_MS` while it is waited for (time spent writing to disk meanwhile does not count).
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export const STALL_MS = 30_000;

const reading = new WeakSet<Socket>();

/** Whether the server's request timeout on this socket hit an upload read here (server.ts then lets it go on). */
export const isLongUpload = (socket: Socket): boolean => reading.has(socket);

export async function* longUpload(req: IncomingMessage, stallMs = STALL_MS): AsyncGenerator<Buffer> {
  const socket = req.socket;
  reading.add(socket);
  try {
    const chunks = req[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    for (;;) {
      const timer = setTimeout(() => req.destroy(new Error(`no data for ${stallMs / 1000} s`)), stallMs);
      timer.unref();
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } finally {
        clearTimeout(timer);
      }
      if (next.done) break;
      yield next.value;
    }
    if (!req.complete) throw new Error('the request body ended early');
  } finally {
    reading.delete(socket);
  }
}
