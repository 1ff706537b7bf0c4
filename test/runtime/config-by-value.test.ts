/**
 * Configs are compared by value: the same config uploaded with its keys in another order (an editor, a
 * script or the console may write them so) restarts no bus, keeps every device's resolved object and asks
 * for no restart. A real change next to it is still seen.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { sameValue } from '../../src/util/same-value.js';
import { call } from '../helpers/http.js';

let dir = '';
let gw: Gateway | undefined;

test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-byvalue-'));
});
test.after.each(async () => {
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

const config = (dataDir: string): Record<string, unknown> => ({
  gateway: { id: 'byvalue', data_dir: dataDir, log_level: 'silent' },
  http: { host: '127.0.0.1', port: 0, body_limit: '1MB' },
  mqtt: { enable: false, port: 0, ws_port: 0 },
  history: { enable: false },
  shadow: { persist_interval: '1s', default_ttl: '1m' },
  buses: [{ id: 'sim', driver: 'simulator' }, { id: 'sim2', driver: 'simulator' }],
  models: { tick: { points: [{ name: 'count', type: 'int', sim: { fn: 'counter', step: 1 } }] } },
  devices: [{ id: 'a1', model: 'tick', bus: 'sim', poll: '100ms', ttl: '1m' }, { id: 'b1', model: 'tick', bus: 'sim2', poll: '100ms' }],
});

/** Every object's keys in reverse order, at every depth; arrays keep their order. */
function reversed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversed);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversed(x)]));
}

interface Apply { changes: string[]; restartRequired: string[] }
const put = (port: number, body: unknown): Promise<{ body: { success: boolean; errorMsg: string; data: Apply } }> =>
  call<Apply>(port, '/api/v1/config', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('the same config with its keys in another order changes nothing: no bus restart, no restartRequired', async () => {
  const raw = config(dir);
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  const drivers = new Map(gw.drivers);
  const upload = reversed(raw);
  assert.is.not(JSON.stringify(upload), JSON.stringify(raw), 'the upload really differs as text');
  const r = await put(gw.httpPort, upload);
  assert.ok(r.body.success, r.body.errorMsg);
  assert.equal(r.body.data.restartRequired, []);
  assert.equal(r.body.data.changes, []);
  for (const [id, driver] of drivers) assert.ok(gw.drivers.get(id) === driver, `bus ${id} was not restarted`);

  // A real change in the same reordered shape is still applied, and only there.
  const changed = reversed(raw) as { http: Record<string, unknown> };
  changed.http = { ...changed.http, body_limit: '2MB' };
  const r2 = await put(gw.httpPort, changed);
  assert.ok(r2.body.success, r2.body.errorMsg);
  assert.equal(r2.body.data.restartRequired, ['http']);
  assert.ok(gw.drivers.get('sim') === drivers.get('sim'));
});

test('sameValue: key order and undefined keys do not count; array order and values do', () => {
  assert.ok(sameValue({ a: 1, b: { c: [1, { d: 2, e: 3 }] } }, { b: { c: [1, { e: 3, d: 2 }] }, a: 1 }));
  assert.ok(sameValue({ a: 1, b: undefined }, { a: 1 }));
  assert.not.ok(sameValue([1, 2], [2, 1]));
  assert.not.ok(sameValue({ a: 1 }, { a: '1' }));
  assert.not.ok(sameValue({ a: null }, { a: {} }));
  assert.not.ok(sameValue({ a: 1 }, { a: 1, b: 2 }));
  assert.not.ok(sameValue([], {}));
});

test.run();
