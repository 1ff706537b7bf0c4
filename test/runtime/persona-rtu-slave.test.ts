/**
 * The RTU persona slave on a real pty pair, fed raw bytes: a broadcast is never answered, another unit's
 * request and its answer are told apart and left alone, a request split across writes is answered once
 * whole, and the answer carries a good CRC and goes out no earlier than t3.5 after the request was heard.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SerialPort } from 'serialport';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RtuServerConfig } from '../../src/config/types.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { crc16, crcOk } from '../../src/protocol/modbus/frame.js';
import { RtuPersonaSlave } from '../../src/runtime/persona/rtu-slave.js';
import { silentLogger } from '../../src/util/logger.js';
import { kill, rigUnavailable, sleep, waitFor } from '../drivers/modbus-rig.js';
import { needs, peerHook } from '../helpers/peers.js';

const why = rigUnavailable();
const rigTest = needs(why, 'RTU persona slave tests');

let dir = '';
let socat: ChildProcess | null = null;
let slave: RtuPersonaSlave;
let consumer: SerialPort;
let heard: number[] = [];
const asked: number[][] = [];

/**
 * The slave's clock: the system's, except that a test can hold it still. The slave drops a half frame after
 * 10 ms of silence by this clock, and a loaded machine can put more than that between two writes of this
 * process; held, the pieces of one request are within it whatever the scheduler does. `looks` counts the
 * slave's readings of it: one per chunk it reads from its port.
 */
const held = { at: null as number | null, skew: 0, looks: 0 };
const slaveClock: Clock = {
  now: () => systemClock.now(),
  mono: () => {
    held.looks++;
    return held.at ?? systemClock.mono() - held.skew;
  },
};
const hold = (): void => void (held.at = systemClock.mono() - held.skew);
const release = (): void => {
  held.skew = systemClock.mono() - held.at!;
  held.at = null;
};

const frame = (bytes: number[]): Buffer => {
  const b = Buffer.from([...bytes, 0, 0]);
  const crc = crc16(b, 0, bytes.length);
  b[bytes.length] = crc & 0xff;
  b[bytes.length + 1] = crc >> 8;
  return b;
};

test.before(peerHook(why, async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-rtu-slave-'));
  const a = path.join(dir, 'ttyA');
  const b = path.join(dir, 'ttyB');
  socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  await waitFor('socat links', () => existsSync(a) && existsSync(b), 5000);
  const config = { id: 's', transport: 'rtu', port: b, baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1, units: [], max_age: 0 } as RtuServerConfig;
  slave = new RtuPersonaSlave(config, new Map([[2, async (pdu: Uint8Array) => {
    asked.push([...pdu]);
    return Uint8Array.of(4, 2, 0x12, 0x34);
  }], [3, async () => {
    // A device unit whose read goes to its bus: ready 300 ms later.
    await sleep(300);
    return Uint8Array.of(3, 2, 0, 3);
  }]]), slaveClock, silentLogger);
  await slave.start();
  consumer = new SerialPort({ path: a, baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => consumer.open((err) => (err ? reject(err) : resolve())));
  consumer.on('data', (d: Buffer) => heard.push(...d));
}));

test.after(async () => {
  if (consumer?.isOpen) await new Promise<void>((resolve) => consumer.close(() => resolve()));
  await slave?.stop();
  await kill(socat);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const send = async (b: Buffer): Promise<void> => {
  await new Promise<void>((resolve, reject) => consumer.write(b, (err) => (err ? reject(err) : resolve())));
  await new Promise<void>((resolve) => consumer.drain(() => resolve()));
};

rigTest('a request to unit 2 is answered with a good CRC', async () => {
  heard = [];
  await send(frame([2, 4, 0, 0, 0, 1]));
  await waitFor('the answer', () => heard.length >= 7, 3000);
  assert.equal(heard.slice(0, 5), [2, 4, 2, 0x12, 0x34]);
  assert.ok(crcOk(Uint8Array.from(heard), 0, 7));
  // Never before t3.5 (4.01 ms at 9600 baud) after the request was heard: the slave waits for it.
  assert.ok(slave.counts.replyMs >= 11_000 / 9600 * 3.5, `answered after ${slave.counts.replyMs} ms`);
  assert.ok(slave.counts.replyMsMin !== null && slave.counts.replyMsMin >= 11_000 / 9600 * 3.5, `fastest answer ${slave.counts.replyMsMin} ms`);
});

rigTest('a broadcast, another unit and a response frame get no answer; the slave counts them', async () => {
  heard = [];
  const before = { ...slave.counts };
  await send(frame([0, 6, 0, 1, 0, 7])); // broadcast write
  await sleep(50);
  await send(frame([5, 4, 0, 0, 0, 1])); // another unit's request
  await sleep(20);
  await send(frame([5, 4, 2, 0, 9])); // that unit's answer
  await sleep(50);
  // Then ours: the only answer heard must be to it.
  await send(frame([2, 4, 0, 0, 0, 1]));
  await waitFor('the answer', () => heard.length >= 7, 3000);
  await sleep(100);
  assert.is(heard.length, 7, `heard ${JSON.stringify(heard)}`);
  assert.is(slave.counts.broadcasts - before.broadcasts, 1);
  assert.is(slave.counts.otherUnits - before.otherUnits, 1);
  assert.is(slave.counts.responses - before.responses, 1);
  assert.is(slave.counts.answered - before.answered, 1);
});

rigTest('a request written in two pieces is answered once, whole', async () => {
  heard = [];
  asked.length = 0;
  const f = frame([2, 4, 0, 0x10, 0, 2]);
  const requests = slave.counts.requests;
  // The second piece goes out only once the slave has read the first: two reads, never one that a late event
  // loop coalesced (which would pass without anything to assemble).
  hold();
  try {
    const looks = held.looks;
    await send(f.subarray(0, 3));
    await waitFor('the slave reading the first piece', () => held.looks > looks, 3000);
    assert.is(slave.counts.requests, requests, 'three bytes are no request yet');
    await send(f.subarray(3));
    await waitFor('the request, whole', () => slave.counts.requests > requests, 3000);
  } finally {
    release();
  }
  await waitFor('the answer', () => heard.length >= 7, 3000);
  assert.equal(asked, [[4, 0, 0x10, 0, 2]]);
  assert.is(slave.counts.requests - requests, 1, 'one request');
});

rigTest('the port goes away (socat killed) and comes back (socat restarted): the slave opens it again and answers', async () => {
  const a = path.join(dir, 'ttyC');
  const b = path.join(dir, 'ttyD');
  const pair = (): ChildProcess => spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  let link: ChildProcess | null = pair();
  let own: RtuPersonaSlave | null = null;
  let port: SerialPort | null = null;
  const got: number[] = [];
  const connect = async (): Promise<SerialPort> => {
    const p = new SerialPort({ path: a, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) => p.open((err) => (err ? reject(err) : resolve())));
    p.on('data', (d: Buffer) => got.push(...d));
    p.on('error', () => { /* the pty goes away in this test */ });
    return p;
  };
  const ask = async (p: SerialPort): Promise<void> => {
    got.length = 0;
    await new Promise<void>((resolve, reject) => p.write(frame([2, 4, 0, 0, 0, 1]), (err) => (err ? reject(err) : resolve())));
    await waitFor('the answer', () => got.length >= 7, 3000);
    assert.equal(got.slice(0, 5), [2, 4, 2, 0x12, 0x34]);
  };
  try {
    await waitFor('socat links', () => existsSync(a) && existsSync(b), 5000);
    const config = { id: 'r', transport: 'rtu', port: b, baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1, units: [], max_age: 0 } as RtuServerConfig;
    own = new RtuPersonaSlave(config, new Map([[2, async () => Uint8Array.of(4, 2, 0x12, 0x34)]]), systemClock, silentLogger);
    await own.start();
    port = await connect();
    await ask(port);
    await kill(link);
    await waitFor('the slave sees its port gone', () => own!.counts.lost === 1 && !own!.counts.open, 5000);
    if (port.isOpen) await new Promise<void>((resolve) => port!.close(() => resolve()));
    port = null;
    await sleep(600); // a few failed attempts while the adapter is away
    link = pair();
    await waitFor('socat links again', () => existsSync(a) && existsSync(b), 5000);
    await waitFor('the slave opened its port again', () => own!.counts.open && own!.counts.reopened === 1, 10_000);
    port = await connect();
    await ask(port);
  } finally {
    if (port?.isOpen) await new Promise<void>((resolve) => port!.close(() => resolve()));
    await own?.stop();
    await kill(link);
  }
});

rigTest('an answer ready only after the master sent another request is not sent (the master moved on); alone, it is', async () => {
  heard = [];
  const before = slave.counts.superseded;
  await send(frame([3, 3, 0, 0, 0, 1]));
  await sleep(50);
  await send(frame([5, 4, 0, 0, 0, 1])); // the master gave up on unit 3 and asks another slave
  await sleep(600);
  assert.equal(heard, [], 'nothing went out over the next request');
  assert.is(slave.counts.superseded, before + 1);
  await send(frame([3, 3, 0, 0, 0, 1]));
  await waitFor('the slow answer', () => heard.length >= 7, 3000);
  assert.equal(heard.slice(0, 5), [3, 3, 2, 0, 3]);
});

test.run();
