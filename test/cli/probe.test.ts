/**
 * `shadowgate probe` as a user runs it (the real CLI process) against the pymodbus slave on a socat pty pair
 * (test/drivers/modbus-rig.ts): the SDM120 image of unit 1 and 2, a model built to hit every plausibility rule
 * and outcome, a silent unit, and usage errors. Every child is killed in `after`; runCli times out.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Rig, rigUnavailable } from '../drivers/modbus-rig.js';
import { needs, peerHook } from '../helpers/peers.js';
import { killAll, runCli } from '../helpers/spawn.js';

const missing = rigUnavailable();
const rigTest = needs(missing, 'probe rig tests');

let rig: Rig | null = null;
let dir = '';
let config = '';
/** No config file exists there: a run that reads one fails. */
const NO_CONFIG = { SHADOWGATE_CONFIG: '/nonexistent/shadowgate-probe-test.json' };

interface LibPoint { name: string; unit?: string; access: string; modbus: { table: string; address: number } }
let sdm120: { points: LibPoint[]; serial?: { baud_rate?: number; unit_id?: number } };

/** The rig's unit 1..N SDM120-like input image (scripts/modbus-rig/slave.py); every other register is 0. */
const IMAGE: Record<number, (unit: number) => number> = { 0: (u) => 230.5 + u, 6: () => 5.25, 12: () => 1210, 70: () => 50, 342: () => 1234.5 };

/** A model meant to be wrong: each point lands on one rule or outcome (values: slave.py's image of unit 1). */
const WRONG = {
  serial: { baud_rate: 2400, parity: 'none', data_bits: 8, stop_bits: 1, unit_id: 1 },
  points: [
    { name: 'ok_voltage', type: 'float', access: 'R', unit: 'V', modbus: { table: 'input', address: 0, data_type: 'float32' } },
    { name: 'volts_zero', type: 'float', access: 'R', unit: 'V', modbus: { table: 'input', address: 30, data_type: 'float32' } },
    { name: 'freq_wrong', type: 'float', access: 'R', unit: 'Hz', modbus: { table: 'input', address: 0, data_type: 'float32' } },
    { name: 'swapped', type: 'float', access: 'R', unit: 'V', modbus: { table: 'input', address: 0, data_type: 'float32', word_order: 'little' } },
    // holding 0..1 = 0xFFFF 0xC350: a float32 NaN.
    { name: 'nan_float', type: 'float', access: 'R', modbus: { table: 'holding', address: 0, data_type: 'float32' } },
    { name: 'nan_declared', type: 'float', access: 'R', invalid: [{ raw: '0xFFFFC350', reason: 'not available' }], modbus: { table: 'holding', address: 0, data_type: 'float32' } },
    { name: 'energy_neg', type: 'int', access: 'R', unit: 'kWh', modbus: { table: 'holding', address: 2, data_type: 'int32' } },
    // holding 4..5 = 3e9 as uint32 with the low word first: read as a big-endian float32 ≈ 2.3e18.
    { name: 'big_float', type: 'float', access: 'R', unit: 'W', modbus: { table: 'holding', address: 4, data_type: 'float32' } },
    // The slave has 200 discrete inputs: 300 answers exception 2.
    { name: 'missing', type: 'int', access: 'R', modbus: { table: 'discrete', address: 300, data_type: 'bool' } },
    { name: 'reset', type: 'int', access: 'W', modbus: { table: 'coil', address: 0, data_type: 'bool' } },
  ],
};

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-probe-'));
  sdm120 = JSON.parse(await readFile('board/models/eastron-sdm120.json', 'utf8')) as typeof sdm120;
});
// uvu runs hooks in order: the temp dir exists when this one writes the config into it.
test.before(peerHook(missing, async () => {
  rig = new Rig('1,2');
  await rig.start();
  config = path.join(dir, 'config.json');
  await writeFile(config, JSON.stringify({
    buses: [
      { id: 'rs485', driver: 'modbus-rtu', port: rig.master, timeout: '150ms' }, { id: 'sim', driver: 'simulator' },
      { id: 'tcp', driver: 'modbus-tcp', host: '127.0.0.1', port: rig.tcpPort },
    ],
    models: { 'rig-wrong': WRONG },
  }));
}));
test.after(async () => {
  killAll();
  await rig?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The rig's Eastron identity at holding FC00h: serial number 20000000 + unit, meter code 0070h, software version 0102h. */
const IDENTITY: Record<string, (unit: number) => number> = { serial_number: (unit) => 20000000 + unit, meter_code: () => 0x0070, software_version: () => 0x0102 };

/** The value text the probe prints for an SDM120 point of the rig's image. */
function expectedSdm120(p: LibPoint, unit: number): string {
  const v = p.modbus.table === 'input' ? IMAGE[p.modbus.address]?.(unit) ?? 0 : IDENTITY[p.name]?.(unit) ?? NaN;
  return p.unit ? `${v} ${p.unit}` : String(v);
}

rigTest('--port, no config at all: an SDM120 at unit 1 reads every point with its unit, all plausible, exit 0', async () => {
  const r = await runCli(['probe', '--port', rig!.master, '--unit', '1', '--model', 'eastron-sdm120'], NO_CONFIG);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.is(r.stderr, '');
  const lines = r.stdout.trimEnd().split('\n');
  const readable = sdm120.points.filter((p) => p.access !== 'W');
  assert.ok(readable.every((p) => p.modbus.table === 'input' || p.name in IDENTITY), 'the test expects the SDM120 map in input registers and the identity');
  assert.is(lines[0], `unit 1 on ${rig!.master} at 9600 8N1, model eastron-sdm120: ${readable.length} readable points`);
  assert.equal(lines.slice(1, -1).map((l) => l.split(/\s{2,}/)), readable.map((p) => [p.name, expectedSdm120(p, 1)]));
  assert.ok(lines.some((l) => /^voltage +231\.5 V$/.test(l)), 'unit 1 serves 231.5 V');
  assert.ok(lines.some((l) => /^frequency +50 Hz$/.test(l)));
  assert.ok(lines.some((l) => /^total_energy +1234\.5 kWh$/.test(l)));
  assert.is(lines.at(-1), `${readable.length} points: ${readable.length} ok, 0 implausible, 0 not available, 0 failed`);
  assert.not.match(r.stdout, /!/);
});

rigTest('--bus of a config, --json: unit 2 answers with its own voltage; one JSON object', async () => {
  const r = await runCli(['probe', '--config', config, '--bus', 'rs485', '--unit', '2', '--model', 'eastron-sdm120', '--json']);
  assert.is(r.code, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout) as { bus: string; unit: number; model: string; answered: boolean; points: Record<string, unknown>[]; summary: Record<string, number> };
  const readable = sdm120.points.filter((p) => p.access !== 'W');
  assert.is(report.bus, 'rs485');
  assert.is(report.unit, 2);
  assert.is(report.answered, true);
  assert.equal(report.points.find((p) => p.name === 'voltage'), { name: 'voltage', value: 232.5, unit: 'V' });
  assert.equal(report.points.find((p) => p.name === 'power_factor'), { name: 'power_factor', value: 0 }, 'no unit: none in the JSON');
  assert.equal(report.points.map((p) => p.name), readable.map((p) => p.name));
  assert.equal(report.summary, { points: readable.length, ok: readable.length, implausible: 0, not_available: 0, failed: 0 });
});

rigTest('a modbus-tcp bus of the config: the same image through the slave over TCP', async () => {
  const r = await runCli(['probe', '--config', config, '--bus', 'tcp', '--unit', '1', '--model', 'eastron-sdm120']);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^unit 1 on bus tcp \\(127\\.0\\.0\\.1:${rig!.tcpPort}\\), model eastron-sdm120: `));
  assert.match(r.stdout, /^voltage +231\.5 V$/m);
  assert.match(r.stdout, /^current +5\.25 A$/m);
});

rigTest('a wrong model: each implausible value flagged with its reason, a declared marker not available, a failed request; exit 1', async () => {
  const r = await runCli(['probe', '--config', config, '--bus', 'rs485', '--unit', '1', '--model', 'rig-wrong']);
  assert.is(r.code, 1, r.stdout + r.stderr);
  const line = (name: string): string => r.stdout.split('\n').find((l) => l.startsWith(`${name} `)) ?? `(no line for ${name})`;
  assert.match(line('ok_voltage'), /^ok_voltage +231\.5 V$/);
  assert.match(line('volts_zero'), /^volts_zero +0 V +! 0 V: no voltage at the terminals or wrong register$/);
  assert.match(line('freq_wrong'), /^freq_wrong +231\.5 Hz +! 231\.5 Hz is outside 45\.\.65 Hz$/);
  assert.match(line('swapped'), / V +! -2\.418e-41 V is outside 1\.\.1000 V$/);
  assert.match(line('nan_float'), /^nan_float +null \(not a number \(NaN\)\) +! NaN: not a number/);
  assert.match(line('nan_declared'), /^nan_declared +null \(not available\)$/);
  assert.match(line('energy_neg'), /^energy_neg +-123456 kWh +! -123456 kWh: a negative energy counter$/);
  assert.match(line('big_float'), / W +! \|2\.318e\+18\| ≥ 1e8: a float this large/);
  assert.match(line('missing'), /^missing +error: .*exception 2/);
  assert.is(line('reset'), '(no line for reset)', 'a write-only point is not read');
  assert.match(r.stdout, /\n9 points: 1 ok, 6 implausible, 1 not available, 1 failed\n/);
  assert.match(r.stdout, /^unit 1 on bus rs485 \(.* at 9600 8N1\), model rig-wrong: 9 readable points\n/);
});

rigTest('a unit that does not answer: said once, with the factory setting when the model declares one; exit 1', async () => {
  let r = await runCli(['probe', '--config', config, '--bus', 'rs485', '--unit', '9', '--model', 'rig-wrong']);
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^9 points: no answer to any request$/m);
  assert.ok(r.stdout.includes(`\nno answer from unit 9 on ${rig!.master} at 9600 8N1; this model's factory setting is 2400 8N1, unit 1\n`), r.stdout);
  assert.not.match(r.stdout, /timeout:/, 'not the same timeout on every point line');

  r = await runCli(['probe', '--port', rig!.master, '--unit', '9', '--model', 'eastron-sdm120', '--timeout', '100', '--json'], NO_CONFIG);
  assert.is(r.code, 1, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout) as { answered: boolean; message: string; points: { error?: string }[]; summary: { failed: number } };
  assert.is(report.answered, false);
  assert.is((report as unknown as { bus: unknown }).bus, null, 'a --port bus has no id');
  assert.ok(report.points.every((p) => /timeout/.test(p.error ?? '')), 'each point carries its error in JSON');
  assert.is(report.summary.failed, report.points.length);
  const s = sdm120.serial;
  const factory = s?.baud_rate !== undefined || s?.unit_id !== undefined ? /; this model's factory setting is / : /: check the unit id, the line settings and the A\/B wiring$/;
  assert.match(report.message, new RegExp(`^no answer from unit 9 on ${rig!.master.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} at 9600 8N1${factory.source.replace(/^\^/, '')}`));
});

test('usage and config errors exit 2 before anything is sent, with the reason on stderr', async () => {
  const port = rig?.master ?? '/nonexistent/tty';
  const cases: [string[], RegExp][] = [
    [['--port', port, '--unit', '1', '--model', 'eastron-sdm12'], /unknown model "eastron-sdm12" \(did you mean: eastron-sdm120/],
    [['--port', port, '--unit', '1', '--model', 'gpio-relay-2ch'], /gpio-relay-2ch is not a Modbus model/],
    [['--port', port, '--unit', '0', '--model', 'eastron-sdm120'], /--unit must be 1\.\.247/],
    [['--port', port, '--model', 'eastron-sdm120'], /--unit is required\nusage: shadowgate probe/],
    [['--port', port, '--unit', '1', '--model', 'eastron-sdm120', '--parity', 'mark'], /invalid serial settings\n {2}--parity: /],
    [['--port', port, '--bus', 'rs485', '--unit', '1', '--model', 'eastron-sdm120'], /--bus .* or --port .*, not both/],
  ];
  if (config) {
    cases.push([['--config', config, '--bus', 'nope', '--unit', '1', '--model', 'eastron-sdm120'], /unknown bus "nope" \(buses: rs485, sim, tcp\)/]);
    cases.push([['--config', config, '--bus', 'sim', '--unit', '1', '--model', 'eastron-sdm120'], /bus sim is a simulator bus/]);
  }
  for (const [args, expected] of cases) {
    const r = await runCli(['probe', ...args], NO_CONFIG);
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, expected);
    assert.is(r.stdout, '', 'nothing on stdout');
  }
  // Without --port the config file is read: a missing one is a config error.
  const r = await runCli(['probe', '--bus', 'rs485', '--unit', '1', '--model', 'eastron-sdm120'], NO_CONFIG);
  assert.is(r.code, 2);
  assert.match(r.stderr, /shadowgate-probe-test\.json: invalid configuration/);
});

test.run();
