/// <reference lib="dom" />
/**
 * The console's Bus doctor view in Debian's chromium (playwright-core) on a real gateway whose RTU bus is a pty
 * with three device images (scripts/modbus-rig/devices.py): no sideways scroll at 375 or 1280 px before and
 * after a run, progress while it runs, each unit with its best model, and a found unit added with one click on
 * "Add" (the add-device form filled in: bus, unit, model, an id) and then polled.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { rigUnavailable } from '../drivers/modbus-rig.js';
import { deviceRigConfig, startDeviceGateway, type DeviceGateway } from '../helpers/device-rig.js';
import { waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { browserUnavailable, fits, launch, openPage } from './helpers.js';

const why = browserUnavailable() ?? rigUnavailable();
const browserTest = needs(why, 'console bus doctor tests');

let browser: Browser | undefined;
let g: DeviceGateway | undefined;

test.before(peerHook(why, async () => {
  g = await startDeviceGateway('sdm630:1,xy-md02:2,ws-relay:3', (rig, dir) => deviceRigConfig(dir, rig, {
    // A second's timeout: beside a CPU hog and the rest of the suite a pymodbus answer has come after 300 ms, and the
    // doctor on a running bus waits each answer as long as the bus's timeout (a unit answering later is missed).
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, timeout: '1s' }],
    devices: [{ id: 'climate', model: 'xy-md02', bus: 'rs485', unit_id: 2, poll: '1s' }],
  }));
  browser = await launch();
}));
test.after(async () => {
  await browser?.close();
  await g?.stop();
});

browserTest('the doctor view runs, shows each unit with its model, fits 375 and 1280 px; "Add" adds a found unit, which is then polled', async () => {
  const base = `http://127.0.0.1:${g!.gw.httpPort}`;
  const { page, problems } = await openPage(browser!, `${base}/#/doctor/rs485`, { width: 375, height: 800 });
  try {
    await page.waitForSelector('main h1:text-is("Bus doctor")');
    await page.waitForSelector('select option[value="rs485"]', { state: 'attached' });
    await fits(page, 'the doctor view before a run');
    await page.fill('label:has-text("To") input', '5');
    await page.click('button:text-is("Run the doctor")');
    await page.waitForSelector('.doctor-progress progress', { timeout: 10_000 });
    // The run's end (its report), then what it found: waiting for exactly 3 units said nothing when it found 2.
    await page.waitForSelector('.doctor-report', { timeout: 150_000 });
    const units = await page.$$eval('.doctor-unit', (els) => els.map((e) => [e.getAttribute('data-unit'), e.querySelector('.model')?.textContent ?? '']));
    assert.equal(units, [['1', 'eastron-sdm630'], ['2', 'xy-md02'], ['3', 'waveshare-modbus-rtu-relay']]);
    assert.ok((await page.textContent('.doctor-unit[data-unit="1"] .why'))!.length > 0, 'the reason is shown');
    await fits(page, 'the doctor view with its report');

    // One click: the add-device form comes filled in for unit 1 with its model.
    await page.click('.doctor-unit[data-unit="1"] a:text-is("Add")');
    await page.waitForSelector('main h1:text-is("Add a device")');
    assert.is(await page.inputValue('label:has-text("Device id") input'), 'sdm630-1');
    // The bus list loads after the form shows (beside a busy job, after the id was read): its option, then its value.
    await page.waitForSelector('label:has-text("Bus") select option[value="rs485"]', { state: 'attached', timeout: 15_000 });
    assert.is(await page.inputValue('label:has-text("Bus") select'), 'rs485');
    assert.is(await page.inputValue('fieldset:has(legend:text-is("Unit id")) label:has-text("Unit id") input'), '1');
    await page.waitForFunction(() => (document.querySelector('select[size]') as HTMLSelectElement | null)?.value === 'eastron-sdm630');
    await fits(page, 'the add-device form filled in by the doctor');
    // The usual flow: a test read, then save.
    await page.click('button:text-is("Test read")');
    await page.waitForSelector('.probe [role="status"]', { timeout: 30_000 });
    await page.click('button:text-is("Save")');
    await page.waitForFunction(() => location.hash === '#/device/sdm630-1', undefined, { timeout: 15_000 });
    const driver = g!.gw.drivers.get('rs485')!;
    await waitFor(() => ((driver.stats!() as { devices: Record<string, { requests: number }> }).devices['sdm630-1']?.requests ?? 0) > 0, 20_000, 'sdm630-1 polled');
    await waitFor(() => g!.gw.shadow.GetDeviceRecord('sdm630-1')?.online === true, 20_000, 'sdm630-1 online');
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

test.run();
