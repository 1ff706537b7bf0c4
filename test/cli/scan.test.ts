/**
 * `shadowgate scan --port` and the one-off commands against a port the running gateway holds, as a user runs
 * them (the real CLI and the real gateway process) on a socat pty pair with the pymodbus slave
 * (test/drivers/modbus-rig.ts). Every child is killed in `after`; every run times out.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Rig, rigUnavailable } from '../drivers/modbus-rig.js';
import { needs, peerHook } from '../helpers/peers.js';
import { cli, exited, killAll, runCli, waitReady } from '../helpers/spawn.js';

const missing = rigUnavailable();
const rigTest = needs(missing, 'scan --port rig tests');

let rig: Rig | null = null;
let dir = '';
/** No config file exists there: a run that reads one fails. */
const NO_CONFIG = { SHADOWGATE_CONFIG: '/nonexistent/shadowgate-scan-test.json' };

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-scan-'));
});
test.before(peerHook(missing, async () => {
  rig = new Rig('1,2');
  await rig.start();
}));
test.after(async () => {
  killAll();
  await rig?.stop();
  await rm(dir, { recursive: true, force: true });
});

rigTest('scan --port, no config at all: the unit ids that answer on the line, exit 0', async () => {
  const r = await runCli(['scan', '--port', rig!.master, '--from', '1', '--to', '4', '--timeout', '150'], NO_CONFIG);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.stdout.trim().split('\n'), ['unit 1: answered', 'unit 2: answered', 'found 2 unit(s): 1, 2']);
  // The line settings are the schema's defaults unless given; a wrong one answers nothing.
  const odd = await runCli(['scan', '--port', rig!.master, '--baud', '9600', '--parity', 'even', '--from', '1', '--to', '2', '--timeout', '100'], NO_CONFIG);
  assert.ok(odd.code === 0 || odd.code === 1, odd.stdout + odd.stderr);
});

test('scan flags: --port or --bus, serial flags only with --port, bad settings named by their flag; exit 2', async () => {
  let r = await runCli(['scan', '--port', '/dev/ttyX', '--bus', 'rs485'], NO_CONFIG);
  assert.is(r.code, 2);
  assert.match(r.stdout, /give --bus \(a bus of the config\) or --port \(a serial port\), not both/);
  r = await runCli(['scan'], NO_CONFIG);
  assert.is(r.code, 2);
  assert.match(r.stdout, /--bus or --port is required/);
  r = await runCli(['scan', '--bus', 'rs485', '--baud', '9600'], NO_CONFIG);
  assert.is(r.code, 2);
  assert.match(r.stdout, /--baud goes with --port/);
  r = await runCli(['scan', '--port', '/dev/ttyX', '--parity', 'sometimes'], NO_CONFIG);
  assert.is(r.code, 2);
  assert.match(r.stdout, /--parity: /);
  r = await runCli(['read', '--port', '/dev/ttyX', '--unit', '1', '--address', '0'], NO_CONFIG);
  assert.is(r.code, 2);
  assert.match(r.stdout, /--port is for scan/);
});

rigTest('while the gateway runs on the port: scan and probe say the gateway holds it and point to the console', async () => {
  const config = path.join(dir, 'config.json');
  await writeFile(config, JSON.stringify({
    gateway: { id: 'scan-test', data_dir: path.join(dir, 'data') },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig!.master, timeout: '150ms' }],
    devices: [],
  }));
  const gw = cli(['run', '--config', config]);
  let stderr = '';
  gw.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitReady(gw, 30_000).catch((err: Error) => { throw new Error(`${err.message}\n${stderr}`); });

  const held = new RegExp(`${rig!.master.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is held by another program — on a gateway, the running shadowgate service`);
  const scanPort = await runCli(['scan', '--port', rig!.master, '--to', '2'], NO_CONFIG);
  assert.is(scanPort.code, 1, scanPort.stdout + scanPort.stderr);
  assert.match(scanPort.stdout, held);
  assert.match(scanPort.stdout, /Devices → Add a device → pick the bus → Scan the bus; REST: POST \/api\/v1\/bus\/scan\?id=BUS/);
  assert.not.match(scanPort.stdout, /Cannot lock port/);
  const scanBus = await runCli(['scan', '--config', config, '--bus', 'rs485', '--to', '2']);
  assert.is(scanBus.code, 1);
  assert.match(scanBus.stdout, held);
  const probe = await runCli(['probe', '--port', rig!.master, '--unit', '1', '--model', 'eastron-sdm120'], NO_CONFIG);
  assert.is(probe.code, 1, probe.stdout + probe.stderr);
  assert.match(probe.stderr, held);
  assert.match(probe.stderr, /Devices → Add a device → Test read/);

  gw.kill('SIGTERM');
  assert.is(await exited(gw, 15_000), 0, stderr);
  // The gateway gone, the port is free again.
  // A second to answer: this checks the port is free, not how fast pymodbus answers beside another job.
  const after = await runCli(['scan', '--port', rig!.master, '--from', '1', '--to', '1', '--timeout', '1000'], NO_CONFIG);
  assert.is(after.code, 0, after.stdout);
});

test.run();
