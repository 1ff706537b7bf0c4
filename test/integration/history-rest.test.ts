/** History over real HTTP through the gateway: values recorded from simulated devices, queries and errors. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { call, waitFor } from '../helpers/http.js';

let dir = '';
let gw: Gateway | undefined;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-hist-rest-'));
  gw = await startGateway(validateConfig({
    gateway: { data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points: [
      { name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } },
      { name: 'label', type: 'string', sim: { fn: 'constant', value: 'ok' } },
    ] } },
    devices: [{ id: 'c1', model: 'm', bus: 'sim', poll: '20ms' }],
  }, { env: {} }), { log: silentLogger });
});
test.after(async () => {
  await gw?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Row { time: string; ts: number; value: number }

test('raw history returns the counter values recorded, ascending, with local time and epoch ms', async () => {
  const rows = await waitFor(async () => {
    const { body } = await call<Row[]>(gw!.httpPort, '/api/v1/history?device=c1&point=n');
    return body.success && body.data.length >= 5 && body.data;
  }, 5000, 'five samples');
  const values = rows.map((r) => r.value);
  assert.equal(values, [...values].sort((a, b) => a - b), 'ascending');
  assert.ok(values.every((v, i) => i === 0 || v === values[i - 1]! + 1), 'every change recorded once');
  assert.match(rows[0]!.time, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);
  assert.ok(Math.abs(rows.at(-1)!.ts - Date.now()) < 10_000);
});

test('aggregate count/max over 1s buckets agree with the raw samples', async () => {
  const from = Date.now() - 60_000;
  const raw = (await call<Row[]>(gw!.httpPort, `/api/v1/history?device=c1&point=n&start=${from}`)).body.data;
  const last = raw.at(-1)!.ts;
  const agg = await call<Row[]>(gw!.httpPort, `/api/v1/history/aggregate?device=c1&point=n&function=count&interval=1h&start=${from}&end=${last}`);
  assert.ok(agg.body.success, agg.body.errorMsg);
  const total = agg.body.data.reduce((sum, b) => sum + b.value, 0);
  assert.is(total, raw.filter((r) => r.ts <= last).length);
  const max = await call<Row[]>(gw!.httpPort, `/api/v1/history/aggregate?device=c1&point=n&function=max&interval=1h&start=${from}&end=${last}`);
  assert.is(Math.max(...max.body.data.map((b) => b.value)), raw.filter((r) => r.ts <= last).at(-1)!.value);
});

test('bad parameters are clear envelope errors', async () => {
  const port = gw!.httpPort;
  const msg = async (q: string) => (await call(port, `/api/v1/history${q}`)).body.errorMsg;
  assert.is(await msg('?point=n'), 'device is required');
  assert.is(await msg('?device=zz&point=n'), 'unknown device');
  assert.is(await msg('?device=c1&point=zz'), 'unknown point: zz');
  assert.match(await msg('/aggregate?device=c1&point=n&function=median&interval=1m'), /unknown function "median"/);
  assert.match(await msg('/aggregate?device=c1&point=n&function=avg&interval=0s'), /interval/);
  assert.match(await msg('?device=c1&point=n&start=2026-01-02%2000:00:00&end=2026-01-01%2000:00:00'), /end is before start/);
  assert.match(await msg('?device=c1&point=n&start=yesterday'), /invalid start "yesterday"/);
});

test.run();
