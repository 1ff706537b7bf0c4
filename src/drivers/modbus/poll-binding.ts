/**
 * The serial port binding the RTU link opens its port with: serialport's own, except that reads and writes
 * are non-blocking read(2)/write(2) calls on the tty fd, on the event loop (reads when its poller says it
 * is readable), instead of fs.read/fs.write through libuv's thread pool.
 *
 * Why: serialport reads every chunk in the thread pool and then reads again to hear EAGAIN there, and
 * writes every request there too, so one request cost three thread-pool round trips (a futex wake-up of a
 * worker, an eventfd wake-up of the loop each) on top of the poll event: most of the gateway's CPU per
 * request on a Pi (issue 16 item 7). A tty fd is opened O_NONBLOCK: a read returns what the line
 * discipline holds or EAGAIN at once, a write of a Modbus frame (at most 256 bytes) goes into the tty's
 * buffer at once (EAGAIN, then the poller, only if that is full), so each is a syscall on the loop. It also
 * means no byte is ever held by a read in flight in a worker while the bus owner listens before it talks:
 * what has come is in the kernel (its takePending reads it) or already delivered.
 */
import { readSync, writeSync } from 'node:fs';
import { SerialPort } from 'serialport';

/** What this file uses of serialport's binding (its types live in a package that is not a dependency). */
interface PortBinding {
  fd: number | null;
  readonly isOpen: boolean;
  poller: { once(event: 'readable' | 'writable', fn: (err: Error | null) => void): unknown };
  read(buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }>;
  write(buffer: Buffer): Promise<void>;
  /** serialport's: the write in progress (its drain waits for it) */
  writeOperation: Promise<void> | null;
}
interface Binding {
  open(options: object): Promise<PortBinding>;
}

/** Like serialport's own: a closed port's read is canceled, not a disconnect. */
const canceled = (): Error => Object.assign(new Error('Port is not open'), { canceled: true });

const ready = (port: PortBinding, event: 'readable' | 'writable'): Promise<void> =>
  new Promise((resolve, reject) => port.poller.once(event, (err) => (err ? reject(err) : resolve())));

const isAgain = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EINTR';
};

/**
 * Reads of `port` from its poller. A read that returned less than asked for emptied the kernel's buffer
 * then, so the next one waits for the poller first instead of reading to hear EAGAIN (an exception built
 * per answer); the poller is level-triggered, so bytes that came meanwhile wake it at once.
 */
export function pollRead(port: PortBinding): PortBinding['read'] {
  let drained = false;
  return async (buffer, offset, length) => {
    for (;;) {
      if (drained) await ready(port, 'readable');
      if (!port.isOpen || port.fd === null) throw canceled();
      try {
        const bytesRead = readSync(port.fd, buffer, offset, length, null);
        drained = bytesRead < length;
        // 0 from a tty: nothing to read now (serialport's stream takes a 0 for the end of the port).
        if (bytesRead > 0) return { bytesRead, buffer };
      } catch (err) {
        if (!isAgain(err)) throw err; // the stream takes it for a disconnect and closes (as with serialport's read)
        drained = true;
      }
    }
  };
}

/** Writes of `port`: all of `buffer`, waiting for the poller only when the tty's buffer is full. */
export function pollWrite(port: PortBinding): PortBinding['write'] {
  const write = async (buffer: Buffer): Promise<void> => {
    for (let offset = 0; offset < buffer.length;) {
      if (!port.isOpen || port.fd === null) throw new Error('Port is not open');
      try {
        offset += writeSync(port.fd, buffer, offset, buffer.length - offset);
      } catch (err) {
        if (!isAgain(err)) throw err;
        await ready(port, 'writable');
      }
    }
  };
  return (buffer) => {
    const op = write(buffer).finally(() => {
      if (port.writeOperation === op) port.writeOperation = null;
    });
    port.writeOperation = op;
    return op;
  };
}

/** serialport's detected binding, with the reads and writes above on every port it opens. */
export const pollBinding: Binding = {
  async open(options) {
    const port = await (SerialPort.binding as unknown as Binding).open(options);
    port.read = pollRead(port);
    port.write = pollWrite(port);
    return port;
  },
};
