/**
 * RTU over TCP on a Modbus server ("framing": "rtu") in front of a real RTU bus (pymodbus slave on a pty):
 * a client written from the spec (Modbus over serial line §2.5.1: unit, PDU, CRC low byte first) sends raw
 * RTU frames over TCP; every answer must be the MBAP server's answer for the same request, byte for byte,
 * with the RTU unit and CRC around it. Two frames in one segment, one frame over two segments, and a frame
 * with a bad CRC (dropped unanswered, as a slave on a line drops it).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, Rig, rigUnavailable, sleep, waitFor } from '../drivers/modbus-rig.js';
import { RawModbusClient, read, writeRegister } from '../helpers/modbus-tcp-client.js';
import { needs, peerHook } from '../helpers/peers.js';

const why = rigUnavailable();
const rigTest = needs(why, 'Modbus door RTU-over-TCP tests');

/** Modbus CRC-16 written out from the spec (not the gateway's table version). */
function crc(bytes: readonly number[]): number {
  let c = 0xffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
  }
  return c;
}
const rtu = (unit: number, pdu: readonly number[]): number[] => {
  const body = [unit, ...pdu];
  const c = crc(body);
  return [...body, c & 0xff, c >> 8];
};

/** Answer length by the spec: exception 5; FC 1-4 byte count + 5; FC 5, 6, 15, 16 eight bytes. */
function answerLength(buf: Buffer): number {
  if (buf.length < 3) return -1;
  const fc = buf[1]!;
  if (fc & 0x80) return 5;
  if (fc <= 4) return 5 + buf[2]!;
  return 8;
}

class RtuClient {
  private buf = Buffer.alloc(0);
  private readonly frames: number[][] = [];
  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      for (let n = answerLength(this.buf); n > 0 && this.buf.length >= n; n = answerLength(this.buf)) {
        this.frames.push([...this.buf.subarray(0, n)]);
        this.buf = this.buf.subarray(n);
      }
    });
    socket.on('error', () => {});
  }

  static open(port: number): Promise<RtuClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1' });
      socket.setNoDelay(true);
      socket.once('connect', () => resolve(new RtuClient(socket)));
      socket.once('error', reject);
    });
  }

  write(bytes: readonly number[]): void {
    this.socket.write(Buffer.from(bytes));
  }

  /** The next whole answer frame; rejects after `timeoutMs`. */
  async next(timeoutMs = 3000): Promise<number[]> {
    const end = Date.now() + timeoutMs;
    while (this.frames.length === 0) {
      if (Date.now() > end) throw new Error(`no answer within ${timeoutMs} ms`);
      await sleep(5);
    }
    return this.frames.shift()!;
  }

  /** Bytes received and not yet a whole frame, and whole frames not taken. */
  get unread(): number {
    return this.buf.length + this.frames.length;
  }

  close(): void {
    this.socket.destroy();
  }
}

let rig: Rig;
let gw: Gateway;
let dir: string;
let mbapPort = 0;
let rtuPort = 0;
const clients: Array<{ close(): void }> = [];

const model = {
  limits: { max_registers: 60 },
  points: [
    { name: 'a', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'int16' } },
    { name: 'b', type: 'int', modbus: { table: 'holding', address: 1, data_type: 'uint16' } },
    { name: 'f', type: 'float', modbus: { table: 'holding', address: 6, data_type: 'float32' } },
    { name: 'voltage', type: 'float', modbus: { table: 'input', address: 0, data_type: 'float32' } },
  ],
};

test.before(peerHook(why, async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-rtu-'));
  rig = new Rig('1', true);
  await rig.start();
  mbapPort = await freePort();
  rtuPort = await freePort();
  const units = [{ unit: 1, device: 'm1', writes: true }];
  const raw = {
    gateway: { id: 'door-rtu', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, timeout: '200ms', retries: 1 }],
    models: { meter: model },
    devices: [{ id: 'm1', model: 'meter', bus: 'rs485', unit_id: 1, poll: '200ms' }],
    servers: [
      { id: 'mbap', transport: 'tcp', host: '127.0.0.1', port: mbapPort, max_age: '2s', units },
      { id: 'rtu', transport: 'tcp', framing: 'rtu', host: '127.0.0.1', port: rtuPort, max_age: '2s', units },
    ],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  await waitFor('m1 polled', () => gw.shadow.GetDevicePoint('m1', 'b') !== undefined, 5000);
}));

test.after(async () => {
  for (const c of clients) c.close();
  await gw?.stop();
  await rig?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function pair(): Promise<{ m: RawModbusClient; r: RtuClient }> {
  const m = await RawModbusClient.open(mbapPort);
  const r = await RtuClient.open(rtuPort);
  clients.push(m, r);
  return { m, r };
}

/** The RTU answer is unit + the MBAP answer's PDU + a good CRC. */
function assertSame(rtuAnswer: number[], mbapPdu: number[], unit: number, what: string): void {
  assert.equal(rtuAnswer, rtu(unit, mbapPdu), what);
}

rigTest('RTU frames over TCP are answered bit-identically to the MBAP server, RTU-framed, in order', async () => {
  const { m, r } = await pair();
  const cases: Array<[number, number[]]> = [
    [1, read(3, 0, 8)], [1, read(4, 0, 2)], // polled: from the image
    [1, read(3, 10, 14)], [1, read(1, 0, 5)], // not polled: through the bus
    [7, read(3, 0, 1)], // unmapped unit: 0x0A
    [1, [0x2b, 0x0e, 0x01, 0x00]], // FC 43/14: not served, 0x01
    [1, writeRegister(20, 4321)], // a write, once over each framing
  ];
  let tid = 0;
  for (const [unit, pdu] of cases) {
    const viaMbap = (await m.request(++tid, unit, pdu)).pdu;
    r.write(rtu(unit, pdu));
    assertSame(await r.next(), viaMbap, unit, `unit ${unit} ${JSON.stringify(pdu)}`);
  }
});

rigTest('two frames in one TCP segment, and one frame over two segments', async () => {
  const { m, r } = await pair();
  const a = read(3, 0, 2);
  const b = read(4, 0, 2);
  const refA = (await m.request(1, 1, a)).pdu;
  const refB = (await m.request(2, 1, b)).pdu;
  r.write([...rtu(1, a), ...rtu(1, b)]);
  assertSame(await r.next(), refA, 1, 'first of two in one segment');
  assertSame(await r.next(), refB, 1, 'second of two in one segment');
  const split = rtu(1, a);
  r.write(split.slice(0, 3));
  await sleep(100); // a separate segment (setNoDelay on both ends)
  assert.is(r.unread, 0, 'no answer to half a frame');
  r.write(split.slice(3));
  assertSame(await r.next(), refA, 1, 'frame over two segments');
});

rigTest('a frame with a bad CRC is dropped unanswered; the next good frame is answered', async () => {
  const { m, r } = await pair();
  const bad = rtu(1, read(3, 1, 1));
  bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
  const refGood = (await m.request(1, 1, read(3, 0, 1))).pdu;
  r.write(bad);
  await sleep(300);
  assert.is(r.unread, 0, 'nothing answers a bad CRC');
  r.write(rtu(1, read(3, 0, 1)));
  assertSame(await r.next(), refGood, 1, 'good frame after a bad one');
  // And a bad one directly followed by a good one in the same segment.
  r.write([...bad, ...rtu(1, read(3, 0, 1))]);
  assertSame(await r.next(), refGood, 1, 'good frame behind a bad one in one segment');
  await sleep(200);
  assert.is(r.unread, 0, 'exactly one answer');
  assert.ok((gw.modbusServers.figures()['rtu']?.units['1']?.requests ?? 0) >= 2, 'the RTU server counted its requests');
  const metrics = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`)).text();
  const dropped = Number(/^shadowgate_modbus_server_discarded_bytes_total\{server="rtu"\} (\d+)$/m.exec(metrics)?.[1]);
  assert.ok(dropped >= 2 * bad.length, `the two bad frames' bytes counted as dropped (${dropped})`);
  assert.not.match(metrics, /discarded_bytes_total\{server="mbap"\}/, 'not for an MBAP server');
});

test.run();
