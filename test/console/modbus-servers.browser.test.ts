/// <reference lib="dom" />
/**
 * The Buses page shows each Modbus server in a real browser (Debian's chromium, playwright-core) against a
 * real gateway with a Modbus TCP server on a simulator device: clients connected, and per unit requests,
 * hits, misses and exceptions as a real Modbus TCP client made them — and a server whose port is taken as
 * not running, with its one-line reason; axe-core finds no serious or critical violation.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort } from '../drivers/modbus-rig.js';
import { RawModbusClient, read } from '../helpers/modbus-tcp-client.js';
import { needs } from '../helpers/peers.js';
import { browserUnavailable, launch, openPage } from './helpers.js';

const why = browserUnavailable();
const browserTest = needs(why, 'Modbus servers console test');

browserTest('Buses page: a Modbus server\'s clients and per-unit requests, hits, misses, exceptions; a server that did not start', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-servers-page-'));
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const taken = (holder.address() as { port: number }).port;
  const port = await freePort();
  const raw = {
    gateway: { id: 'gw', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { tick: { points: [{ name: 'temp', type: 'float', unit: '°C', sim: { fn: 'constant', value: 20 } }] } },
    devices: [{ id: 'a1', model: 'tick', bus: 'sim', poll: '200ms' }],
    servers: [
      { id: 'door', transport: 'tcp', host: '127.0.0.1', port, units: [{ unit: 1, device: 'a1' }] },
      { id: 'blocked', transport: 'tcp', host: '127.0.0.1', port: taken, units: [] },
    ],
  };
  let gw: Gateway | undefined;
  let browser: Browser | undefined;
  let client: RawModbusClient | undefined;
  try {
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    const g = gw;
    const deadline = Date.now() + 5000;
    while (g.shadow.GetDevicePoint('a1', 'temp') === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    client = await RawModbusClient.open(port);
    for (let tid = 1; tid <= 3; tid++) assert.is((await client.request(tid, 1, read(4, 0, 2))).pdu[0], 4, 'unit 1: temp as float32');
    assert.equal((await client.request(4, 7, read(3, 0, 1))).pdu, [0x83, 0x0a], 'unit 7 is not mapped');
    browser = await launch();
    const { page, problems } = await openPage(browser, `http://127.0.0.1:${g.httpPort}/#/buses`);
    const door = page.locator('[data-server="door"]');
    await door.locator('[data-unit="7"]').waitFor();
    assert.is(await door.locator('[data-k="connections"]').textContent(), '1');
    const cells = async (unit: string): Promise<string[]> =>
      Promise.all(['requests', 'hits', 'misses', 'exceptions'].map((k) => door.locator(`[data-unit="${unit}"] [data-k="${k}"]`).textContent().then(String)));
    assert.equal(await cells('1'), ['3', '3', '0', '0']);
    assert.equal(await cells('7'), ['1', '0', '0', '1']);
    assert.is(await door.locator('[data-unit="7"] [data-k="exceptions"]').getAttribute('title'), '0x0a: 1');
    const blocked = page.locator('[data-server="blocked"]');
    assert.match((await blocked.textContent())!, /not running/);
    assert.match((await blocked.textContent())!, new RegExp(`servers\\[blocked\\]\\.port ${taken} is in use`));
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
    const serious = await page.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe;
      const r = await axe.run();
      return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
    });
    assert.equal(serious, [], 'axe');
    // A client that leaves is no longer counted (the page polls every 2 s).
    client.close();
    await page.waitForFunction(() => document.querySelector('[data-server="door"] [data-k="connections"]')?.textContent === '0', undefined, { timeout: 6000 });
    assert.equal(problems, []);
  } finally {
    client?.close();
    await browser?.close();
    await gw?.stop();
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
