import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfigFile, resolveDevices, schemaPath, validateConfig } from '../../src/config/load.js';
import { problemsOf } from './helpers.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

async function loadProblems(file: string): Promise<string[]> {
  try {
    await loadConfigFile(file, { env: {} });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected the file to be refused');
}

async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'shadowgate-config-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('board/demo.json loads: loopback, simulator devices, durations in ms', async () => {
  const config = await loadConfigFile(path.join(REPO, 'board/demo.json'), { env: {} });
  assert.is(config.http.host, '127.0.0.1');
  assert.is(config.http.port, 8081);
  assert.is(config.mqtt.host, '127.0.0.1');
  assert.is(config.gateway.data_dir, path.resolve('.data/demo'));
  assert.is(config.shadow.persist_interval, 5000);
  assert.ok(config.devices.length >= 2 && config.devices.length <= 3);
  assert.ok(config.buses.every((b) => b.driver === 'simulator'));
  const devices = resolveDevices(config);
  const points = devices.flatMap((d) => [...d.points.values()]);
  const temperature = points.find((p) => p.sim?.fn === 'sine');
  assert.equal(temperature?.sim, { fn: 'sine', min: 18, max: 26, period: 60_000 });
  assert.is(temperature?.type, 'float');
  assert.is(temperature?.decimals, 2);
  assert.ok(points.some((p) => p.sim?.fn === 'counter' && p.type === 'int'));
  assert.ok(points.some((p) => p.type === 'float' && p.access === 'RW' && p.sim?.fn === 'constant' && p.sim.value === 21.5));
  assert.ok(points.some((p) => p.type === 'string' && p.access === 'R' && p.sim?.fn === 'constant' && p.sim.value === 'ok'));
  assert.ok(points.some((p) => p.type === 'int' && p.access === 'RW' && p.sim?.fn === 'constant' && p.sim.value === 0));
  for (const d of devices) assert.is(d.config.poll, 1000);
});

test('an empty config gets every default from the schema', () => {
  for (const raw of [{}, { buses: [], devices: [] }]) {
    const config = validateConfig(raw, { env: {}, models: {} });
    assert.equal(config.gateway, { id: 'shadowgate', data_dir: '/var/lib/shadowgate', log_level: 'info' });
    assert.equal(config.http, { host: '0.0.0.0', port: 8081, body_limit: 1024 * 1024, allowed_hosts: [], auth: { tokens: [], read_tokens: [], protect_reads: false } });
    assert.equal(config.mqtt, {
      enable: true, host: '0.0.0.0', port: 1883, ws_port: 8083, base_topic: 'shadowgate', users: [],
      allow_anonymous: true, homeassistant: { enable: false, prefix: 'homeassistant' },
    });
    assert.equal(config.shadow, { max_devices: 1024, max_points: 65536, default_ttl: 300_000, check_interval: 1000, persist_interval: 10_000 });
    assert.equal(config.history, { enable: true, retention: 30 * 86_400_000, max_disk: 512 * 1024 * 1024 });
    assert.equal(config.export, { shadow: { enable: false, format: 'json', interval: 10_000, targets: [] } });
    assert.equal(config.buses, []);
    assert.equal(config.devices, []);
  }
});

test('defaults inside optional blocks and per-driver bus defaults', () => {
  const config = validateConfig({
    mqtt: { users: [{ username: 'ha', password_hash: 'scrypt$x' }], bridge: { url: 'mqtts://up:8883', topic_prefix: 'site-a' } },
    export: { shadow: { targets: ['http', 'file'], http: { url: 'http://x/y' }, file: { path: '/tmp/s.json' } } },
    buses: [
      { id: 'rtu', driver: 'modbus-rtu', port: '/dev/ttyAMA0' },
      { id: 'tcp', driver: 'modbus-tcp', host: '10.0.0.5' },
    ],
  }, { env: {}, models: {} });
  assert.equal(config.mqtt.users, [{ username: 'ha', password_hash: 'scrypt$x', can_write: false }]);
  assert.equal(config.mqtt.bridge, { url: 'mqtts://up:8883', topic_prefix: 'site-a', queue_max: 64 * 1024 * 1024 });
  assert.equal(config.export.shadow.http, { url: 'http://x/y', timeout: 5000, queue_max: 100 });
  assert.equal(config.export.shadow.file, { path: '/tmp/s.json', mode: 'snapshot', max_size: 10 * 1024 * 1024 });
  assert.equal(config.buses[0], {
    id: 'rtu', driver: 'modbus-rtu', port: '/dev/ttyAMA0', baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1, echo: false,
    timeout: 300, retries: 1, max_registers: 125, max_gap: 'auto',
  });
  assert.equal(config.buses[1], { id: 'tcp', driver: 'modbus-tcp', host: '10.0.0.5', port: 502, timeout: 1000, retries: 1, max_registers: 125, max_gap: 'auto' });
});

test('validateConfig does not modify its input', () => {
  const raw = { shadow: { default_ttl: '30s' }, buses: [] };
  validateConfig(raw, { env: {}, models: {} });
  assert.equal(raw, { shadow: { default_ttl: '30s' }, buses: [] });
});

test('every problem is reported at once, each with its path', () => {
  const problems = problemsOf({
    gateway: { log_level: 'loud' },
    http: { port: 70000 },
    shadow: { default_ttl: '5' },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0', baudrate: 9600 }],
    devices: [{ id: 'd1', model: 'nope', bus: 'rs485', unit_id: 1 }],
  });
  assert.equal(problems, [
    'gateway.log_level: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    'http.port: must be <= 65535 (got 70000)',
    'shadow.default_ttl: must be a duration like 500ms, 30s, 5m, 1h30m, 14d (got "5")',
    'buses[0]: must not have property "baudrate" (did you mean "baud_rate"?)',
    'devices[0].model: unknown model "nope" (none defined)',
  ]);
});

test('schema messages: enum, required, type, unknown driver, unknown top-level key', () => {
  const problems = problemsOf({
    gatway: {},
    buses: [
      { id: 'a', driver: 'modbus-rtu', port: '/dev/x', parity: 'mark' },
      { id: 'b', driver: 'modbus-tcp' },
      { id: 'c', driver: 'can' },
    ],
    devices: [{ id: 'bad id', model: 'm', bus: 'a', unit_id: '1' }],
  });
  for (const expected of [
    '(root): must not have property "gatway" (did you mean "gateway"?)',
    'buses[0].parity: must be one of none, even, odd (got "mark")',
    'buses[1].host: is required',
    'buses[2].driver: must be one of simulator, modbus-rtu, modbus-tcp, gpio (got "can")',
    'devices[0].id: must be 1-64 characters of A-Z a-z 0-9 _ . - (got "bad id")',
    'devices[0].unit_id: must be integer (got "1")',
  ]) assert.ok(problems.includes(expected), `missing "${expected}" in\n${problems.join('\n')}`);
});

test('a config that is not an object is one root problem', () => {
  assert.equal(problemsOf([]), ['(root): must be a JSON object (got an array)']);
  assert.equal(problemsOf('x'), ['(root): must be a JSON object (got string)']);
});

test('env overrides data_dir and ports before validation', () => {
  const env = { SHADOWGATE_DATA_DIR: 'rel/data', SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '18830' };
  const config = validateConfig({ gateway: { data_dir: '/elsewhere' }, http: { port: 9000 } }, { env, models: {} });
  assert.is(config.gateway.data_dir, path.resolve('rel/data'));
  assert.is(config.http.port, 0);
  assert.is(config.mqtt.port, 18830);
  assert.is(config.mqtt.ws_port, 8083);
});

test('bad env values are problems like any other', () => {
  const problems = problemsOf({ http: { host: 7 } }, { env: { SHADOWGATE_HTTP_PORT: 'eighty', SHADOWGATE_MQTT_PORT: '65536' } });
  assert.equal(problems, [
    '$SHADOWGATE_HTTP_PORT: must be a port number 0-65535 (got "eighty")',
    '$SHADOWGATE_MQTT_PORT: must be a port number 0-65535 (got "65536")',
    'http.host: must be string (got 7)',
  ]);
});

test('a file that is not JSON is one problem with line and column', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, '{\n  "gateway": { "id": "x", }\n}\n');
    const problems = await loadProblems(file);
    assert.is(problems.length, 1);
    assert.match(problems[0]!, /^\(root\): not valid JSON at line 2, column 27: /);
  });
});

test('a missing file is a problem, not a crash', async () => {
  await withTempDir(async (dir) => {
    const problems = await loadProblems(path.join(dir, 'missing.json'));
    assert.is(problems.length, 1);
    assert.match(problems[0]!, /^\(root\): cannot read config file .*missing\.json: .*ENOENT/);
  });
});

test('a file with a byte-order mark loads', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'bom.json');
    await writeFile(file, '\uFEFF{ "gateway": { "id": "bom" } }');
    const config = await loadConfigFile(file, { env: {}, modelsDir: path.join(dir, 'no-models') });
    assert.is(config.gateway.id, 'bom');
  });
});

test('ConfigError lists the problems in its message', () => {
  try {
    validateConfig({ http: { port: -1 } }, { env: {}, models: {} });
    assert.unreachable('should throw');
  } catch (e) {
    assert.instance(e, ConfigError);
    assert.is((e as ConfigError).code, 'CONFIG_INVALID');
    assert.match((e as Error).message, /invalid configuration \(1 problem\):\n {2}http\.port: must be >= 0/);
  }
});

test('schemaPath names the shipped schema', async () => {
  const schema = JSON.parse(await (await import('node:fs/promises')).readFile(schemaPath(), 'utf8')) as { definitions: Record<string, unknown> };
  assert.ok(schema.definitions.model, 'model definition for board/models files');
});

test.run();
