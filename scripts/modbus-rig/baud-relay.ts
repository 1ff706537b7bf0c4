/**
 * Baud-emulating relay for benchmarks: ptys deliver bytes instantly whatever the baud rate (notes
 * §2), so this forwards bytes between two ptys at the serial line rate (11 bits per character), one
 * direction at a time like a half-duplex RS-485 pair. A chunk is forwarded when its last byte would
 * have left the wire. Requests reach the slave t3.5 later still: a real RTU slave only knows a frame
 * has ended after 3.5 character times of silence (pymodbus parses by length and would not wait).
 */
import { SerialPort } from 'serialport';

export interface BaudRelay {
  stop(): Promise<void>;
  bytes: number;
}

const open = (path: string, baudRate: number): Promise<SerialPort> =>
  new Promise((resolve, reject) => {
    const port = new SerialPort({ path, baudRate, autoOpen: false });
    port.open((err) => (err ? reject(err) : resolve(port)));
  });

export async function startBaudRelay(masterSide: string, slaveSide: string, baud: number): Promise<BaudRelay> {
  const a = await open(masterSide, baud);
  const b = await open(slaveSide, baud);
  const charMs = 11_000 / baud;
  const t35 = baud > 19_200 ? 1.75 : 3.5 * charMs;
  let lineFreeAt = 0; // half duplex: one shared line
  const timers = new Set<NodeJS.Timeout>();
  const relay: BaudRelay = {
    bytes: 0,
    async stop() {
      for (const t of timers) clearTimeout(t);
      await Promise.all([a, b].map((p) => new Promise<void>((r) => (p.isOpen ? p.close(() => r()) : r()))));
    },
  };
  const forward = (to: SerialPort, extraMs: number) => (chunk: Buffer): void => {
    const now = performance.now();
    const start = Math.max(now, lineFreeAt);
    lineFreeAt = start + chunk.length * charMs;
    relay.bytes += chunk.length;
    const t = setTimeout(() => {
      timers.delete(t);
      if (to.isOpen) to.write(chunk);
    }, Math.max(0, lineFreeAt + extraMs - now));
    timers.add(t);
  };
  a.on('data', forward(b, t35));
  b.on('data', forward(a, 0));
  a.on('error', () => {});
  b.on('error', () => {});
  return relay;
}
