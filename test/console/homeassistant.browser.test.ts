/// <reference lib="dom" />
/**
 * The console's Home Assistant page in a real browser (Debian's chromium, playwright-core) against a real
 * gateway (simulator bus, MQTT on port 0): it names the broker and login, says HA was not seen, and once an
 * HA-like client announces itself on the broker, shows it seen with the configs sent — without a reload;
 * no sideways scroll at 375 px, and axe-core finds no serious or critical violation.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { haLike, type HaLike } from '../export/ha-like.js';
import { needs } from '../helpers/peers.js';
import { browserUnavailable, launch, openPage } from './helpers.js';

const why = browserUnavailable();
const browserTest = needs(why, 'Home Assistant page browser test');

browserTest('Home Assistant page: broker and login, then HA seen with the configs sent, live', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-ha-page-'));
  const raw = {
    gateway: { id: 'gw', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    history: { enable: false },
    mqtt: { enable: true, host: '127.0.0.1', port: 0, ws_port: 0, homeassistant: { enable: true } },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { tick: { points: [{ name: 'temp', type: 'float', unit: '°C', sim: { fn: 'constant', value: 20 } }] } },
    devices: [{ id: 'a1', model: 'tick', bus: 'sim', poll: '200ms' }],
  };
  let gw: Gateway | undefined;
  let browser: Browser | undefined;
  let ha: HaLike | undefined;
  try {
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    browser = await launch();
    const { page, problems } = await openPage(browser, `http://127.0.0.1:${gw.httpPort}/#/homeassistant`);
    await page.waitForSelector('[data-k="broker"]');
    assert.is(await page.textContent('[data-k="broker"]'), `127.0.0.1:${gw.mqttPort}`);
    assert.match((await page.textContent('[data-k="login"]'))!, /anonymous/);
    assert.is(await page.textContent('[data-k="seen"]'), 'not seen yet');
    assert.ok(await page.$('nav a[href="#/homeassistant"][aria-current="page"]'), 'in the navigation, current');
    ha = await haLike(`mqtt://127.0.0.1:${gw.mqttPort}`);
    // The page polls every 3 s.
    await page.waitForFunction(() => /^seen, last birth \d{4}-/.test(document.querySelector('[data-k="seen"]')?.textContent ?? ''), undefined, { timeout: 8000 });
    assert.ok(Number(await page.textContent('[data-k="configs"]')) >= 2, 'configs at start and on the birth');
    // HA switches without a login that may write: the command is dropped by the ACL, and the page says why.
    assert.is(await page.$('[data-k="refused"]'), null, 'nothing refused yet');
    await ha.client.publishAsync('shadowgate/a1/set', '{"temp":1}', { qos: 0 });
    await page.waitForSelector('[data-k="refused"]', { timeout: 8000 });
    assert.match((await page.textContent('[data-k="refused"]'))!, /^1 command from MQTT clients refused: .*can_write/);
    // No sideways scroll on a phone.
    await page.setViewportSize({ width: 375, height: 700 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no horizontal scroll at 375 px (${overflow} px)`);
    // axe-core: no serious or critical accessibility violation on the page.
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
    const serious = await page.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe;
      const r = await axe.run();
      return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
    });
    assert.equal(serious, [], 'axe');
    assert.equal(problems, []);
  } finally {
    await ha?.end();
    await browser?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
