/**
 * The clock's sync state end to end (rule 11): read from systemd-timesyncd's flag file, shown in
 * /health/shadow as checks.clock; a restart on an unsynchronized clock restores the shadow without serving
 * its values as fresh (the device is Offline until it answers again); once synchronized, restores go on.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { call, waitFor } from '../helpers/http.js';

/**
 * A temp dir with a timesyncd flag directory that SHADOWGATE_TIMESYNC_FLAG points at (the flag file itself
 * absent: not synchronized); `cleanup` runs first (the gateway stops before its data dir goes).
 */
async function withTimesyncFlag(fn: (dir: string, flag: string) => Promise<void>, cleanup: () => Promise<void> | undefined): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-clock-'));
  const flag = path.join(dir, 'timesync', 'synchronized');
  const saved = process.env.SHADOWGATE_TIMESYNC_FLAG;
  process.env.SHADOWGATE_TIMESYNC_FLAG = flag;
  try {
    await mkdir(path.dirname(flag));
    await fn(dir, flag);
  } finally {
    await cleanup();
    if (saved === undefined) delete process.env.SHADOWGATE_TIMESYNC_FLAG;
    else process.env.SHADOWGATE_TIMESYNC_FLAG = saved;
    await rm(dir, { recursive: true, force: true });
  }
}

test('unsynchronized clock: health says so, and restored values are not served as fresh', async () => {
  let gw: Gateway | undefined;
  await withTimesyncFlag(async (dir, flag) => {
    await writeFile(flag, '');
    const raw = {
      gateway: { id: 'c', data_dir: path.join(dir, 'data'), log_level: 'silent' },
      http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
      buses: [{ id: 'sim', driver: 'simulator' }],
      models: { m: { points: [{ name: 'v', type: 'float', access: 'RW', sim: { fn: 'constant', value: 7 } }] } },
      devices: [{ id: 'd', model: 'm', bus: 'sim', poll: '1h', ttl: '10m' }],
    };
    const config = validateConfig(raw, { env: {} });
    gw = await startGateway(config, { log: silentLogger, raw });
    const g = gw;
    await waitFor(() => g.shadow.GetDevicePoint('d', 'v') === 7, 3000, 'first poll');
    let health = await call<{ checks: { clock: { synchronized: boolean | null } } }>(g.httpPort, '/api/v1/health/shadow');
    assert.is(health.body.data.checks.clock.synchronized, true);
    await g.stop();

    // Synchronized: the restore trusts the age (seconds): fresh.
    gw = await startGateway(config, { log: silentLogger, raw });
    assert.is(gw.shadow.GetDevicePoint('d', 'v'), 7);
    await gw.stop();

    await rm(flag);
    // The device is silent now: after this restart only the restored value exists.
    const silent = { ...raw, devices: [{ ...raw.devices[0], sim_fault: { silent: true } }] };
    gw = await startGateway(validateConfig(silent, { env: {} }), { log: silentLogger, raw: silent });
    const g2 = gw;
    health = await call(g2.httpPort, '/api/v1/health/shadow');
    assert.is(health.body.data.checks.clock.synchronized, false);
    assert.is(g2.shadow.GetDevicePoint('d', 'v'), null, 'not served as fresh');
    assert.is(g2.shadow.GetDeviceRecord('d')!.points[0]!.value, 7, 'still shown with its saved time');
    g2.shadow.CheckTTL();
    assert.is(g2.shadow.GetDeviceState('d'), 'Offline');
  }, () => gw?.stop());
});

test('history written before the clock synchronizes is flagged unsynced; after it, not', async () => {
  let gw: Gateway | undefined;
  await withTimesyncFlag(async (dir, flag) => {
    const raw = {
      gateway: { id: 'h', data_dir: path.join(dir, 'data'), log_level: 'silent' },
      http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false },
      buses: [{ id: 'sim', driver: 'simulator' }],
      models: { m: { points: [{ name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } }] } },
      devices: [{ id: 'd', model: 'm', bus: 'sim', poll: '100ms' }],
    };
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    const port = gw.httpPort;
    await new Promise((r) => setTimeout(r, 800));
    await writeFile(flag, ''); // NTP answered
    await waitFor(async () => (await call<{ checks: { clock: { synchronized: boolean } } }>(port, '/api/v1/health/shadow')).body.data.checks.clock.synchronized, 5000, 'sync seen');
    await new Promise((r) => setTimeout(r, 800));
    type Row = { ts: number; value: number; unsynced?: boolean };
    const rows = (await call<Row[]>(port, '/api/v1/history?device=d&point=n')).body.data;
    const flagged = rows.filter((r) => r.unsynced);
    assert.ok(flagged.length >= 3, `${flagged.length} of ${rows.length} rows flagged`);
    assert.ok(rows.length - flagged.length >= 3, 'rows after the sync are not flagged');
    const firstClean = rows.findIndex((r) => !r.unsynced);
    assert.ok(rows.slice(firstClean).every((r) => !r.unsynced), 'flags end when the clock synchronizes');
    const agg = (await call<Row[]>(port, '/api/v1/history/aggregate?device=d&point=n&function=count&interval=1h')).body.data;
    assert.ok(agg.length >= 1 && agg.some((b) => b.unsynced), 'a bucket holding unsynced samples says so');
  }, () => gw?.stop());
});

test.run();
