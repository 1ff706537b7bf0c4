/**
 * A Modbus server has no idle timeout: a client that says nothing for 5 s keeps its connection and is then
 * served. The server's side of the connection has TCP keepalive on (so a vanished client is found), seen
 * from outside by `ss -o`, which shows a keepalive timer only on a socket with SO_KEEPALIVE set.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, sleep } from '../drivers/modbus-rig.js';
import { RawModbusClient, read } from '../helpers/modbus-tcp-client.js';
import { hasPeer } from '../helpers/peers.js';

const IDLE_MS = 5000;
const ssMissing = spawnSync('ss', ['-V']).status !== 0 && 'ss is missing (Debian package iproute2)';

test('an idle client is not disconnected; the server socket has keepalive on', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-idle-'));
  const port = await freePort();
  const raw = {
    gateway: { id: 'idle', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { tick: { points: [{ name: 'temp', type: 'float', sim: { fn: 'constant', value: 20 } }] } },
    devices: [{ id: 'a1', model: 'tick', bus: 'sim', poll: '200ms' }],
    servers: [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, units: [{ unit: 1, device: 'a1' }] }],
  };
  let gw: Gateway | undefined;
  let client: RawModbusClient | undefined;
  try {
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    client = await RawModbusClient.open(port);
    await sleep(IDLE_MS);
    assert.is(client.closed, false, `still connected after ${IDLE_MS} ms without traffic`);
    if (hasPeer(ssMissing, 'keepalive check')) {
      // The server's end: local port = the server's. -o shows "timer:(keepalive,…)" only with SO_KEEPALIVE.
      const ss = spawnSync('ss', ['-tnoH', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8', timeout: 5000 });
      assert.match(ss.stdout, /timer:\(keepalive,/, `keepalive timer on the server's socket: ${ss.stdout}`);
    }
    const answer = await client.request(9, 1, read(4, 0, 2));
    assert.equal([answer.tid, answer.pdu[0]], [9, 4], 'served after the idle time');
  } finally {
    client?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
