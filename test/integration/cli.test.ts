/** The `shadowgate` command as a user runs it: check-config, run, SIGTERM with a final save. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { cli, exited, killAll, runCli, waitReady } from '../helpers/spawn.js';

let dir = '';
test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-cli-'));
});
test.after(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

test('check-config accepts the demo config', async () => {
  const r = await runCli(['check-config', 'board/demo.json']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /board\/demo\.json: ok \(3 devices on 1 buses\)/);
});

test('check-config prints every problem as path: message and exits 2', async () => {
  const file = path.join(dir, 'bad.json');
  await writeFile(file, JSON.stringify({
    http: { port: 'eighty' },
    buses: [{ id: 'sim', driver: 'simulator' }, { id: 'x', driver: 'canbus' }],
    devices: [{ id: 'd1', model: 'nope', bus: 'sim' }, { id: 'd1', model: 'nope', bus: 'ghost' }],
  }));
  const r = await runCli(['check-config', file]);
  assert.is(r.code, 2);
  for (const expected of [/http\.port: /, /buses\[1\]\.driver: /]) assert.match(r.stderr, expected);
  const problems = r.stderr.split('\n').filter((l) => l.startsWith('  '));
  assert.ok(problems.length >= 2, r.stderr);
});

test('a file that is not JSON, or missing, is a clear problem, not a crash', async () => {
  const file = path.join(dir, 'broken.json');
  await writeFile(file, '{ "gateway": { ');
  const broken = await runCli(['check-config', file]);
  assert.is(broken.code, 2);
  assert.match(broken.stderr, /invalid configuration/);
  const missing = await runCli(['check-config', path.join(dir, 'absent.json')]);
  assert.is(missing.code, 2);
  assert.not.match(missing.stderr, /at .*\.ts:\d+/, 'no stack trace for a user mistake');
});

test('run refuses an invalid config with exit 2 before starting anything', async () => {
  const file = path.join(dir, 'bad-run.json');
  await writeFile(file, JSON.stringify({ devices: [{ id: 'x', model: 'none', bus: 'none' }] }));
  const r = await runCli(['run', '--config', file], { SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_DATA_DIR: path.join(dir, 'd0') });
  assert.is(r.code, 2);
  assert.match(r.stderr, /devices\[0\]/);
});

test('run serves the demo; SIGTERM stops cleanly with exit 0 and the shadow saved', async () => {
  const dataDir = path.join(dir, 'data');
  const env = { SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0' };
  const child = cli(['run', '--config', 'board/demo.json'], env);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await waitReady(child);
  await call(port, '/api/v1/device/writePoint?id=thermostat-1&point=setpoint&value=18.5');
  // The demo's bounds: what a thermostat and a relay take; anything else is refused and changes nothing.
  for (const [point, value, why] of [['setpoint', '1e308', /above the highest value 35 of point setpoint \(5\.\.35\)/], ['relay', '5', /above the highest value 1 of point relay \(0\.\.1\)/], ['relay', '-1', /below the lowest value 0/]] as const) {
    const id = point === 'relay' ? 'meter-1' : 'thermostat-1';
    const r = await call(port, `/api/v1/device/writePoint?id=${id}&point=${point}&value=${value}`);
    assert.is(r.body.success, false, `${point}=${value} refused`);
    assert.match(r.body.errorMsg, why);
  }
  assert.is((await call<{ write_value: unknown }>(port, '/api/v1/shadow/devicePoint?id=thermostat-1&point=setpoint')).body.data.write_value, 18.5, 'nothing changed');
  assert.is((await call(port, '/api/v1/device/writePoint?id=meter-1&point=relay&value=1')).body.success, true, 'the relay takes 1');
  child.kill('SIGTERM');
  assert.is(await exited(child), 0);
  // One key once per log line (a JSON reader keeps only the last of two).
  const lines = out.split('\n').filter((l) => l.startsWith('{'));
  assert.ok(lines.length > 3, out);
  for (const key of ['part', 'level', 'msg']) {
    const twice = lines.filter((l) => l.split(`"${key}":`).length > 2);
    assert.is(twice.length, 0, `"${key}" twice in: ${twice.slice(0, 2).join('\n')}`);
  }
  const again = cli(['run', '--config', 'board/demo.json'], env);
  const port2 = await waitReady(again);
  const p = await call<{ value: unknown; write_value: unknown }>(port2, '/api/v1/shadow/devicePoint?id=thermostat-1&point=setpoint');
  assert.is(p.body.data.write_value, 18.5, 'write value restored');
  assert.is(p.body.data.value, 18.5, 'the simulated device still holds it');
  again.kill('SIGTERM');
  assert.is(await exited(again), 0);
});

test('an unexpected exception saves the shadow once and exits 1 (systemd restarts it); nothing written is lost', async () => {
  const dataDir = path.join(dir, 'fatal-data');
  const config = path.join(dir, 'fatal.json');
  const demo = JSON.parse(await readFile('board/demo.json', 'utf8')) as { shadow: Record<string, unknown> };
  demo.shadow.persist_interval = '1h'; // only the fatal handler's save can keep the write below
  await writeFile(config, JSON.stringify(demo));
  // A bug in the process, stood in for by a timer that throws once the test has written.
  const bomb = path.join(dir, 'bomb.mjs');
  await writeFile(bomb, "process.on('SIGUSR2', () => setTimeout(() => { throw new Error('boom from a bug'); }, 0));\n");
  const env = { SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0' };
  const child = cli(['run', '--config', config], env, ['--import', bomb]);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await waitReady(child);
  await call(port, '/api/v1/device/writePoint?id=thermostat-1&point=setpoint&value=17.5');
  child.kill('SIGUSR2');
  assert.is(await exited(child), 1);
  assert.match(out, /"level":60.*boom from a bug/);
  const again = cli(['run', '--config', config], env);
  const port2 = await waitReady(again);
  const p = await call<{ write_value: unknown }>(port2, '/api/v1/shadow/devicePoint?id=thermostat-1&point=setpoint');
  assert.is(p.body.data.write_value, 17.5);
  again.kill('SIGTERM');
  assert.is(await exited(again), 0);
});

test('unknown commands print usage and exit 2', async () => {
  const r = await runCli(['frobnicate']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /usage: shadowgate/);
});


test('scan/read/write take the config from --config or SHADOWGATE_CONFIG, never a flag\'s value (`--bus sim` is no file name)', async () => {
  // The demo has only a simulator bus: reaching "not modbus" proves the config loaded was the demo, not a file named "sim".
  const r = await runCli(['scan', '--bus', 'sim'], { SHADOWGATE_CONFIG: 'board/demo.json' });
  assert.is(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stdout, /bus sim is a simulator bus, not modbus-rtu or modbus-tcp/);
  assert.not.match(r.stderr, /sim: /);
});

test.run();
