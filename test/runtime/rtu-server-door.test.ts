/**
 * One RTU server on a second serial port serving a device's own registers and a persona: the gateway polls
 * a pymodbus slave (unit 1) on one pty pair, and a pymodbus master on another pty pair (an inverter on its
 * meter port) reads unit 1 (the door to that slave) and unit 2 (an SDM630 persona bound to its points).
 * The door's answers must equal the slave's own answers over its TCP port (same datastore) register for
 * register; the persona's must equal the model's encoding of the shadow value.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { kill, Rig, rigUnavailable, socatPair, waitFor } from '../drivers/modbus-rig.js';
import { RawModbusClient, read } from '../helpers/modbus-tcp-client.js';
import { needs, peerHook } from '../helpers/peers.js';
import { RtuMaster } from '../helpers/rtu-master.js';

const why = rigUnavailable();
const rigTest = needs(why, 'RTU server door tests');

let rig: Rig;
let gw: Gateway;
let dir = '';
let socat: ChildProcess | null = null;
let master: RtuMaster;

const model = {
  points: [
    { name: 'a', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'int16' } },
    { name: 'b', type: 'int', access: 'RW', modbus: { table: 'holding', address: 1, data_type: 'uint16' } },
    { name: 'c', type: 'int', modbus: { table: 'holding', address: 2, data_type: 'int32' } },
    { name: 'f', type: 'float', modbus: { table: 'holding', address: 6, data_type: 'float32' } },
    { name: 'voltage', type: 'float', modbus: { table: 'input', address: 0, data_type: 'float32' } },
  ],
};

/** The slave's own registers over its TCP port: the reference the door must equal. */
async function direct(fc: 3 | 4, address: number, count: number): Promise<number[]> {
  const c = await RawModbusClient.open(rig.tcpPort);
  try {
    const pdu = (await c.request(1, 1, read(fc, address, count))).pdu;
    return Array.from({ length: count }, (_, i) => (pdu[2 + 2 * i]! << 8) | pdu[3 + 2 * i]!);
  } finally {
    c.close();
  }
}

const f32 = (hi: number, lo: number): number => {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(hi, 0);
  b.writeUInt16BE(lo, 2);
  return b.readFloatBE(0);
};

test.before(peerHook(why, async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-rtu-door-'));
  rig = new Rig('1');
  await rig.start();
  const inverter = path.join(dir, 'ttyInverter');
  const meterPort = path.join(dir, 'ttyMeter');
  socat = await socatPair(inverter, meterPort);
  const raw = {
    gateway: { id: 'rtu-door', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, timeout: '300ms' }],
    models: { meter: model },
    devices: [{ id: 'm1', model: 'meter', bus: 'rs485', unit_id: 1, poll: '200ms' }],
    servers: [{
      id: 'meter-port', transport: 'rtu', port: meterPort, baud_rate: 9600, max_age: '2s',
      units: [{ unit: 1, device: 'm1', writes: true }, { unit: 2, persona: 'eastron-sdm630', bind: { voltage_l1: 'm1.voltage' } }],
    }],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  await waitFor('m1 polled', () => gw.shadow.GetDevicePoint('m1', 'b') === 50000, 5000);
  master = new RtuMaster();
  await master.start(inverter);
}));

test.after(async () => {
  await master?.stop();
  await gw?.stop();
  await kill(socat);
  await rig?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

rigTest('a master on the server\'s port reads the device\'s own registers through it, equal to the device', async () => {
  for (const [fc, address, count] of [[3, 0, 8], [3, 2, 2], [4, 0, 2], [3, 20, 6]] as const) {
    const got = await master.run({ op: 'read', fc, unit: 1, address, count });
    assert.ok(got.ok, `FC${fc} ${address}+${count}: ${got.error}`);
    assert.equal(got.regs, await direct(fc, address, count), `FC${fc} ${address}+${count}`);
  }
});

rigTest('the same port serves a persona beside it: the SDM630\'s voltage_l1 is the device\'s voltage', async () => {
  const got = await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 });
  assert.ok(got.ok, got.error);
  assert.is(f32(got.regs![0]!, got.regs![1]!), gw.shadow.GetDevicePoint('m1', 'voltage'));
});

rigTest('a write through the server reaches the device once; an unserved unit stays silent', async () => {
  const wrote = await master.run({ op: 'write', fc: 6, unit: 1, address: 1, values: [4242] });
  assert.ok(wrote.ok, wrote.error);
  assert.equal(await direct(3, 1, 1), [4242]);
  const other = await master.run({ op: 'read', fc: 3, unit: 7, address: 0, count: 1 });
  assert.is(other.error, 'timeout');
  const stats = gw.modbusServers.stats() as Record<string, { units?: Record<string, { writes: number }> }>;
  assert.is(stats['meter-port']?.units?.['1']?.writes, 1, 'the door unit\'s write counted in the server\'s figures');
});

test.run();
