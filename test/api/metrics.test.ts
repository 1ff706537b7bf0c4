/**
 * /metrics by Prometheus' conventions: a real gateway (simulator bus and a Modbus RTU bus on the pymodbus
 * rig: two devices on one unit, one on a unit nobody answers) scraped over HTTP, the text checked by
 * `promtool check metrics` (Debian's prometheus package), and the per-device and per-unit series checked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { renderMetrics, type Collector } from '../../src/api/metrics.js';
import { validateConfig } from '../../src/config/load.js';
import { Shadow } from '../../src/core/shadow.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { Rig, rigUnavailable } from '../drivers/modbus-rig.js';
import { waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';

const PROMTOOL = '/usr/bin/promtool';
const promtoolMissing = spawnSync(PROMTOOL, ['--version']).status === 0 ? null : `${PROMTOOL} is missing (apt-get install prometheus; make test installs it)`;
const why = rigUnavailable();
const rigTest = needs(why, 'metrics over a Modbus bus');
const promtoolTest = needs(promtoolMissing, 'promtool checks');
const scrapeLintTest = needs(why ?? promtoolMissing, 'promtool check of a real scrape');

/** `promtool check metrics` on the text: its findings (empty when clean). */
function promtool(text: string): Promise<{ status: number | null; findings: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, ['check', 'metrics'], { timeout: 20_000 });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, findings: out.trim() }));
    child.stdin.end(text);
  });
}

/** The samples of one metric: labels text → value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm'))) out.set(m[1] ?? '', Number(m[2]));
  return out;
}

let rig: Rig | undefined;
let gw: Gateway | undefined;
let dir = '';

test.before(peerHook(why, async () => {
  rig = new Rig('1');
  await rig.start();
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-metrics-'));
  const meter = { points: [{ name: 'voltage', type: 'float', unit: 'V', modbus: { table: 'input', address: 0, data_type: 'float32' } }] };
  const raw = {
    gateway: { id: 'metrics', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: true, port: 0, ws_port: 0 },
    buses: [{ id: 'sim', driver: 'simulator' }, { id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, timeout: '150ms' }],
    models: {
      thermo: { points: [{ name: 'temperature', type: 'float', unit: '°C', sim: { fn: 'sine', min: 18, max: 26, period: '20s' } }] },
      meter,
    },
    devices: [
      { id: 't1', model: 'thermo', bus: 'sim', poll: '200ms' },
      { id: 'm1', model: 'meter', bus: 'rs485', unit_id: 1, poll: '300ms' },
      { id: 'm1b', model: 'meter', bus: 'rs485', unit_id: 1, poll: '2s' },
      { id: 'm9', model: 'meter', bus: 'rs485', unit_id: 9, poll: '1s' },
    ],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
}));
test.after(async () => {
  await gw?.stop();
  await rig?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const scrape = async (): Promise<string> => {
  const res = await fetch(`http://127.0.0.1:${gw!.httpPort}/metrics`, { signal: AbortSignal.timeout(5000) });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
};

scrapeLintTest('a real scrape passes promtool check metrics', async () => {
  await waitFor(() => gw!.shadow.GetDeviceStatus('m1') && gw!.shadow.GetDeviceStatus('m1b') && gw!.shadow.GetDeviceStatus('t1'), 8000, 'devices online');
  const text = await scrape();
  const r = await promtool(text);
  assert.is(r.findings, '', `promtool findings:\n${r.findings}`);
  assert.is(r.status, 0);
  // Conventions promtool does not check by itself here: no unit or interval inside a name, no doubled prefix.
  for (const name of new Set([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`))) {
    assert.not.match(name, /_ms\b|_\d+ms|bus_bus_|_device_device_/, name);
    if (name.endsWith(' counter')) assert.match(name, /_total counter$/, name);
  }
  assert.is((text.match(/^# HELP /gm) ?? []).length, (text.match(/^# TYPE /gm) ?? []).length, 'HELP on every metric');
  // A stats key no table describes is exported with a stand-in HELP ("<part> figure <key>"): every one is described.
  const standIns = [...text.matchAll(/^# HELP (\S+) .* figure \w+/gm)].map((m) => m[1]);
  assert.equal(standIns, [], `metrics without a written HELP: ${standIns.join(', ')}`);
});

rigTest('per-device gauges carry device, bus and unit; Modbus unit counters are per unit', async () => {
  await waitFor(() => gw!.shadow.GetDeviceStatus('m1') && gw!.shadow.GetDeviceStatus('m1b'), 8000, 'devices online');
  // m9's unit never answers: wait until its polls have failed at least once.
  await waitFor(async () => (samples(await scrape(), 'shadowgate_modbus_unit_timeouts_total').get('{bus="rs485",unit="9"}') ?? 0) > 0, 8000, 'unit 9 timeouts');
  const text = await scrape();
  const online = samples(text, 'shadowgate_device_online');
  assert.equal(Object.fromEntries(online), {
    '{device="m1",bus="rs485",unit="1"}': 1,
    '{device="m1b",bus="rs485",unit="1"}': 1,
    '{device="m9",bus="rs485",unit="9"}': 0,
    '{device="t1",bus="sim",unit=""}': 1,
  });
  const age = samples(text, 'shadowgate_device_last_update_age_seconds');
  for (const l of ['{device="m1",bus="rs485",unit="1"}', '{device="t1",bus="sim",unit=""}']) {
    assert.ok(age.has(l) && age.get(l)! >= 0 && age.get(l)! < 60, `age of ${l}: ${age.get(l)}`);
  }
  assert.not.ok(age.has('{device="m9",bus="rs485",unit="9"}'), 'no age for a device that never delivered');
  // Two devices on unit 1 share the unit's counters: one series for the unit, not one per device.
  const requests = samples(text, 'shadowgate_modbus_unit_requests_total');
  assert.equal([...requests.keys()].sort(), ['{bus="rs485",unit="1"}', '{bus="rs485",unit="9"}']);
  assert.ok(requests.get('{bus="rs485",unit="1"}')! > 0);
  // The poll interval is a label.
  const cycle = samples(text, 'shadowgate_device_poll_cycle_seconds');
  assert.ok(cycle.has('{device="m1",bus="rs485",unit="1",interval="300ms"}'), [...cycle.keys()].join(' '));
  assert.ok(cycle.get('{device="m1",bus="rs485",unit="1",interval="300ms"}')! < 5, 'seconds, not ms');
  const bus = samples(text, 'shadowgate_bus_requests_total').get('{bus="rs485"}') ?? 0;
  assert.ok(bus >= requests.get('{bus="rs485",unit="1"}')!, 'bus total covers its units');
  assert.is(samples(text, 'shadowgate_bus_info').get('{bus="rs485",driver="modbus-rtu"}'), 1);
});

const shadow = new Shadow({ maxDevices: 4, maxPoints: 8, defaultTtl: 60_000, clock: { now: () => 0, mono: () => 0 } });
/** The text of an empty shadow with a part's figures and an extra collector, as a server's per-client figures would add. */
function withCollector(): Promise<string> {
  const clients: Collector = (sink) => {
    const requests = sink.counter('shadowgate_modbus_server_requests_total', 'Requests served to Modbus TCP clients.', ['client']);
    requests(12, { client: '10.0.0.5' });
    requests(3, { client: '10.0.0.6' });
  };
  return renderMetrics({ shadow, persist: {}, buses: {}, parts: { door: { openConnections: 2, lastRequestMs: 4 } } }, [clients]);
}

test('an extra collector adds its own metrics (as a server\'s per-client figures would)', async () => {
  const text = await withCollector();
  assert.match(text, /^# HELP shadowgate_modbus_server_requests_total Requests served to Modbus TCP clients\.$/m);
  assert.match(text, /^shadowgate_modbus_server_requests_total\{client="10\.0\.0\.5"\} 12$/m);
  // A part's figures not described yet still show, as gauges in base units.
  assert.match(text, /^shadowgate_door_open_connections 2$/m);
  assert.match(text, /^shadowgate_door_last_request_seconds 0\.004$/m);
  const bad: Collector = (sink) => sink.counter('shadowgate_oops', 'a counter without _total')(1);
  try {
    await renderMetrics({ shadow, persist: {}, buses: {}, parts: {} }, [bad]);
    assert.unreachable('a counter without _total is refused');
  } catch (err) {
    assert.match(String(err), /must end in _total/);
  }
});

promtoolTest('an extra collector\'s metrics pass promtool check metrics', async () => {
  assert.is((await promtool(await withCollector())).findings, '');
});

test.run();
