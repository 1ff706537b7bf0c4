/**
 * 32 clients, one of them idle for 10 minutes, all served: a real door (the gateway in this process) keeps a
 * client that says nothing for 10 minutes — no idle timeout, TCP keepalive probing it every 30 s — and then
 * serves it on the same connection together with 31 others. Ten minutes cannot be fast-forwarded (the kernel
 * has no clock to skip for an idle TCP connection), so scripts/test.mjs starts this file as the suite begins
 * and reads its result at the end: it runs beside the suite, not after it (test/runtime/door-idle.test.ts is
 * the 5-second version inside the suite).
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

const IDLE_MS = 10 * 60_000;
const CLIENTS = 32;
const ssMissing = spawnSync('ss', ['-V']).status !== 0 && 'ss is missing (Debian package iproute2)';

test(`${CLIENTS} clients, one idle for ${IDLE_MS / 60_000} minutes on its connection, all served`, async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-idle-long-'));
  const port = await freePort();
  const raw = {
    gateway: { id: 'idle-long', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { tick: { points: [{ name: 'temp', type: 'float', sim: { fn: 'constant', value: 20 } }] } },
    devices: [{ id: 'a1', model: 'tick', bus: 'sim', poll: '5s' }],
    servers: [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, units: [{ unit: 1, device: 'a1' }] }],
  };
  let gw: Gateway | undefined;
  const clients: RawModbusClient[] = [];
  try {
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    const connections = async (): Promise<number> => {
      const metrics = await (await fetch(`http://127.0.0.1:${gw!.httpPort}/metrics`)).text();
      return Number(/^shadowgate_modbus_server_connections\{server="door"\} (\d+)$/m.exec(metrics)?.[1] ?? NaN);
    };
    const idle = await RawModbusClient.open(port);
    clients.push(idle);
    const first = await idle.request(1, 1, read(4, 0, 2));
    assert.is(first.pdu[0], 4, `served at the start: ${first.pdu.join(',')}`);
    const t0 = performance.now();
    for (let left = IDLE_MS; left > 0; left = IDLE_MS - (performance.now() - t0)) {
      await sleep(Math.min(30_000, left));
      const s = Math.round((performance.now() - t0) / 1000);
      assert.is(idle.closed, false, `the idle client's connection closed after ${s} s`);
      assert.is(await connections(), 1, `the server still holds the idle connection after ${s} s`);
    }
    const idleS = (performance.now() - t0) / 1000;
    if (hasPeer(ssMissing, 'keepalive check')) {
      // The server's end (local port = the server's): "timer:(keepalive,…)" only on a socket with SO_KEEPALIVE.
      const ss = spawnSync('ss', ['-tnoH', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8', timeout: 5000 });
      assert.match(ss.stdout, /timer:\(keepalive,/, `keepalive timer on the server's socket: ${ss.stdout}`);
    }
    for (let i = 1; i < CLIENTS; i++) clients.push(await RawModbusClient.open(port));
    assert.is(await connections(), CLIENTS);
    const answers = await Promise.all(clients.map((c, i) => c.request(100 + i, 1, read(4, 0, 2), 5000)));
    const wrong = answers.map((a, i) => (a.tid === 100 + i && a.unit === 1 && a.pdu.join() === first.pdu.join() ? '' : `client ${i}: tid ${a.tid} unit ${a.unit} ${a.pdu.join(',')}`)).filter(Boolean);
    assert.equal(wrong, [], 'every client, the idle one first, gets its own answer');
    assert.is(idle.closed, false);
    console.log(`  idle ${idleS.toFixed(0)} s on one connection, then ${CLIENTS} clients served`);
  } finally {
    for (const c of clients) c.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
