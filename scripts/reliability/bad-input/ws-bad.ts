/**
 * Malformed and oversized WebSocket frames (RFC 6455) to the event stream `/api/v1/ws` and to MQTT over
 * WebSocket, on a raw socket after a real upgrade: each connection must be closed by the server, and the
 * process must keep serving.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';

/** A client frame: masked unless `unmasked`; `len` overrides the length field (a lie). */
function frame(opcode: number, payload: Buffer, o: { fin?: boolean; rsv?: number; unmasked?: boolean; len?: bigint } = {}): Buffer {
  const first = ((o.fin ?? true) ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | opcode;
  const len = o.len ?? BigInt(payload.length);
  const mask = o.unmasked ? 0 : 0x80;
  let head: Buffer;
  if (len < 126n) head = Buffer.from([first, mask | Number(len)]);
  else if (len < 65536n) head = Buffer.from([first, mask | 126, Number(len >> 8n), Number(len & 255n)]);
  else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = mask | 127;
    head.writeBigUInt64BE(len, 2);
  }
  if (o.unmasked) return Buffer.concat([head, payload]);
  const key = randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ key[i % 4]!));
  return Buffer.concat([head, key, body]);
}

export interface WsCase {
  what: string;
  /** Where: the REST server's event stream, or the MQTT WebSocket listener. */
  target: 'events' | 'mqtt';
  /** Sent after a successful upgrade; `upgrade` replaces the handshake itself (a bad one). */
  bytes: Buffer;
  upgrade?: string;
  /** MiB of filler streamed after the bytes (a huge frame). */
  streamMb?: number;
}

const mqttConnect = Buffer.from([0x10, 0x0e, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x02, 0x77, 0x73]);

export function wsCases(): WsCase[] {
  const text = Buffer.from('{"hello":1}');
  return [
    { what: 'unmasked client frame', target: 'events', bytes: frame(1, text, { unmasked: true }) },
    { what: 'reserved opcode 3', target: 'events', bytes: frame(3, text) },
    { what: 'reserved control opcode 11', target: 'events', bytes: frame(11, text) },
    { what: 'RSV1 without an extension', target: 'events', bytes: frame(1, text, { rsv: 4 }) },
    { what: 'length 2^63-1', target: 'events', bytes: frame(2, Buffer.alloc(16), { len: (1n << 63n) - 1n }) },
    { what: 'length with the top bit set', target: 'events', bytes: frame(2, Buffer.alloc(16), { len: 1n << 63n }) },
    { what: 'message over maxPayload (64 KiB)', target: 'events', bytes: frame(2, Buffer.alloc(64 * 1024, 0x62)) },
    { what: 'frame announcing 512 MiB, 4 MiB sent', target: 'events', bytes: frame(2, Buffer.alloc(0), { len: 512n << 20n }), streamMb: 4 },
    { what: 'fragmented ping', target: 'events', bytes: frame(9, Buffer.from('p'), { fin: false }) },
    { what: 'ping of 200 bytes', target: 'events', bytes: frame(9, Buffer.alloc(200), { len: 200n }) },
    { what: 'continuation without a start', target: 'events', bytes: frame(0, text) },
    { what: 'text frame of invalid UTF-8', target: 'events', bytes: frame(1, Buffer.from([0xc3, 0x28, 0xff, 0xfe])) },
    { what: 'close code 999', target: 'events', bytes: frame(8, Buffer.from([0x03, 0xe7])) },
    { what: 'close frame of 1 byte', target: 'events', bytes: frame(8, Buffer.from([0x03])) },
    { what: 'garbage after the upgrade', target: 'events', bytes: randomBytes(600) },
    { what: 'upgrade with version 12', target: 'events', bytes: Buffer.alloc(0), upgrade: 'version' },
    { what: 'upgrade without a key', target: 'events', bytes: Buffer.alloc(0), upgrade: 'nokey' },
    { what: 'MQTT: one frame of 2 MiB', target: 'mqtt', bytes: frame(2, Buffer.alloc(2 << 20, 0x61)) },
    { what: 'MQTT: CONNECT, then a packet announcing 200 MB', target: 'mqtt', bytes: Buffer.concat([frame(2, mqttConnect), frame(2, Buffer.from([0x30, 0x80, 0x80, 0x80, 0x60]))]) },
    { what: 'MQTT: unmasked frame', target: 'mqtt', bytes: frame(2, mqttConnect, { unmasked: true }) },
    { what: 'MQTT: text frame of invalid UTF-8', target: 'mqtt', bytes: frame(1, Buffer.from([0xc3, 0x28])) },
  ];
}

/** Upgrades (or tries a bad upgrade), sends the case's bytes and waits (5 s) for the server to close. */
export function sendWsCase(port: number, path: string, c: WsCase): Promise<{ upgraded: boolean; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let upgraded = false;
    let closed = false;
    let head = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ upgraded, closed: false });
    }, 5000);
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      clearTimeout(timer);
      resolve({ upgraded, closed: true });
    });
    socket.on('data', async (d: Buffer) => {
      if (upgraded) return;
      head = Buffer.concat([head, d]);
      if (!head.includes('\r\n\r\n')) return;
      upgraded = head.toString('latin1').startsWith('HTTP/1.1 101');
      if (!upgraded) return;
      socket.write(c.bytes);
      const mb = Buffer.alloc(1 << 20, 0x41);
      for (let i = 0; i < (c.streamMb ?? 0) && !closed; i++) {
        if (!socket.write(mb)) await new Promise((r) => { socket.once('drain', r); socket.once('close', r); });
      }
    });
    socket.once('connect', () => {
      const key = c.upgrade === 'nokey' ? '' : `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n`;
      const version = c.upgrade === 'version' ? '12' : '13';
      const proto = c.target === 'mqtt' ? 'Sec-WebSocket-Protocol: mqtt\r\n' : '';
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${key}Sec-WebSocket-Version: ${version}\r\n${proto}\r\n`);
    });
  });
}
