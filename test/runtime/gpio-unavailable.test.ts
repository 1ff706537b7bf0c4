/**
 * A GPIO bus on a machine without GPIO (no /sys/class/gpio: a VM, a container, a board without the sysfs
 * interface) is not running, and every place a user looks says why: /buses, /health/shadow, a read or a
 * write of one of its points, and the device's own state. Over real HTTP on port 0.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { call } from '../helpers/http.js';

// Not a missing peer: on a board with GPIO the bus runs, and this case cannot be made (skipped, saying so).
const gpioHere = existsSync('/sys/class/gpio');
if (gpioHere) console.log('SKIP: GPIO bus unavailable: this machine has GPIO (/sys/class/gpio), so the bus runs');

(gpioHere ? test.skip : test)('a GPIO bus without GPIO is not running: /buses, health, reads and writes say why', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-gpio-none-'));
  const raw = {
    gateway: { id: 'gw', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'pins', driver: 'gpio' }],
    devices: [{ id: 'relays', model: 'gpio-relay-waveshare-3ch', bus: 'pins' }, { id: 'door', model: 'gpio-contact', bus: 'pins', poll: '5s' }],
  };
  const gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  try {
    const port = gw.httpPort;
    const buses = await call<{ id: string; running: boolean; error: string | null }[]>(port, '/api/v1/buses');
    assert.equal(buses.body.data.map((b) => [b.id, b.running]), [['pins', false]]);
    assert.match(buses.body.data[0]!.error ?? 'no error', /gpio bus pins unavailable: cannot read \/sys\/class\/gpio/);
    const health = await call<{ status: string }>(port, '/api/v1/health/shadow');
    assert.is.not(health.body.data.status, 'healthy', JSON.stringify(health.body.data));
    const read = await call(port, '/api/v1/device/readPoint?id=door&point=closed');
    assert.is(read.body.success, false);
    assert.match(read.body.errorMsg, /^bus pins is not running: gpio bus pins unavailable: /);
    const write = await call(port, '/api/v1/device/writePoint?id=relays&point=relay1&value=1');
    assert.match(write.body.errorMsg, /^bus pins is not running: gpio bus pins unavailable: /);
  } finally {
    await gw.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
