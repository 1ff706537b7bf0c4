/**
 * Start-up failures a user can fix, from the real `shadowgate run`: a port held by another program (a real
 * Mosquitto on the MQTT port, as on a Home Assistant Pi), data_dir not writable, data_dir used by another
 * gateway. Each is one line naming the cause and the setting, exit status 1, no stack trace.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hasMosquitto, MOSQUITTO } from '../export/mosquitto.js';
import { call, waitFor } from '../helpers/http.js';
import { gatewayInto, nobody, otherUserMissing, otherUserTree, runAs } from '../helpers/other-user.js';
import { needs } from '../helpers/peers.js';
import { cli, exited, killAll, runCli, waitReady } from '../helpers/spawn.js';

let dir = '';
let config = '';
const others = new Set<ChildProcess>();

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-startup-'));
  await chmod(dir, 0o755);
  config = path.join(dir, 'config.json');
  await writeFile(config, JSON.stringify({
    http: { host: '127.0.0.1' }, mqtt: { host: '127.0.0.1' },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points: [{ name: 'n', type: 'int', sim: { fn: 'counter' } }] } },
    devices: [{ id: 'd1', model: 'm', bus: 'sim' }],
  }));
});
test.after(async () => {
  killAll();
  for (const p of others) p.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

const env = (dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0', ...extra,
});

/** One line on stderr, exit 1, and no stack frame anywhere in the output. */
function assertOneLine(r: { code: number | null; stdout: string; stderr: string }, expected: RegExp): void {
  assert.is(r.code, 1, r.stderr + r.stdout);
  const lines = r.stderr.trim().split('\n');
  assert.is(lines.length, 1, r.stderr);
  assert.match(lines[0]!, expected);
  assert.not.match(r.stderr + r.stdout, /^\s+at /m, 'no stack trace');
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

needs(!hasMosquitto && `${MOSQUITTO} is missing (apt-get install mosquitto)`, 'MQTT port held by Mosquitto')('the MQTT port held by a real Mosquitto: one line naming mqtt.port, exit 1', async () => {
  const port = await freePort();
  const conf = path.join(dir, 'mosquitto.conf');
  await writeFile(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\n`);
  const mosquitto = spawn(MOSQUITTO, ['-c', conf], { stdio: 'ignore' });
  others.add(mosquitto);
  try {
    await waitFor(() => new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    }), 5000, 'mosquitto listening');
    const r = await runCli(['run', '--config', config], env(path.join(dir, 'mqtt-data'), { SHADOWGATE_MQTT_PORT: String(port) }));
    assertOneLine(r, new RegExp(`^shadowgate: mqtt\\.port ${port} is in use by another program: set mqtt\\.port or mqtt\\.enable=false$`));
  } finally {
    mosquitto.kill('SIGTERM');
  }
});

test('the HTTP port in use: one line naming http.port, exit 1', async () => {
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const { port } = holder.address() as net.AddressInfo;
  try {
    const r = await runCli(['run', '--config', config], env(path.join(dir, 'http-data'), { SHADOWGATE_HTTP_PORT: String(port) }));
    assertOneLine(r, new RegExp(`^shadowgate: http\\.port ${port} is in use by another program: set http\\.port$`));
  } finally {
    await new Promise((r) => holder.close(r));
  }
});

// Root writes anywhere: as root the gateway runs as nobody, as a service user without rights would. Nobody may
// not enter the checkout (a 0700 parent, issue 37), so it runs a bundle of src/main.ts built into a 0755
// directory of its own (test/helpers/other-user.ts); without root, the test's own user has no rights there.
const root = process.getuid?.() === 0;
needs(root && otherUserMissing(), 'data_dir not writable as nobody')('data_dir not writable: one line naming gateway.data_dir, exit 1', async () => {
  const parent = path.join(dir, 'readonly');
  await mkdir(parent, { mode: 0o555 });
  await chmod(parent, 0o555);
  const dataDir = path.join(parent, 'data');
  const r = root ? await runAsNobody(['run', '--config', config], env(dataDir)) : await runCli(['run', '--config', config], env(dataDir));
  assertOneLine(r, new RegExp(`^shadowgate: gateway\\.data_dir ${dataDir} is not writable \\(EACCES on ${dataDir}\\): .*set gateway\\.data_dir$`));
});

test('data_dir where no directory can be made (/proc): one line naming gateway.data_dir, exit 1, not a spin', async () => {
  // Node's recursive mkdir retries an ENOENT under /proc forever: this test then times out (START_MS) instead.
  for (const dataDir of ['/proc/sg-data', '/proc/sg-x/data']) {
    const r = await runCli(['run', '--config', config], env(dataDir));
    assertOneLine(r, new RegExp(`^shadowgate: gateway\\.data_dir ${dataDir} cannot be made \\(ENOENT on /proc/sg-[a-z]+: no directory can be made there\\): set gateway\\.data_dir$`));
  }
});

async function runAsNobody(args: string[], extra: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const tree = await otherUserTree('sg-startup-nobody-');
  try {
    const main = await gatewayInto(tree);
    const r = runAs(nobody(), [main, ...args], { cwd: tree, env: extra });
    if (r.error) throw r.error;
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    await rm(tree, { recursive: true, force: true });
  }
}

test('a second gateway on the same data_dir stops before restoring anything; a stale lock is taken over', async () => {
  const dataDir = path.join(dir, 'shared');
  const first = cli(['run', '--config', config], env(dataDir));
  const port = await waitReady(first);
  assert.is((await call(port, '/api/v1/ok')).body.data, true);
  assert.is((await readFile(path.join(dataDir, 'gateway.lock'), 'utf8')).split('\n')[0], String(first.pid), 'the lock names the running gateway (then this boot)');
  const second = await runCli(['run', '--config', config], env(dataDir));
  assertOneLine(second, new RegExp(`^shadowgate: gateway\\.data_dir ${dataDir} is in use by another shadowgate \\(PID ${first.pid}\\): `));
  assert.not.match(second.stdout, /restored/, 'nothing restored by the second one');
  assert.is((await call(port, '/api/v1/ok')).body.data, true, 'the first one serves on');
  first.kill('SIGTERM');
  assert.is(await exited(first), 0);
  assert.is(await stat(path.join(dataDir, 'gateway.lock')).catch(() => null), null, 'the lock goes with a clean stop');

  // A gateway killed by SIGKILL (or a power cut) leaves its lock: a PID that no longer runs is stale.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  await writeFile(path.join(dataDir, 'gateway.lock'), `${gone.stdout}\n`);
  const second2 = cli(['run', '--config', config], env(dataDir));
  await waitReady(second2);
  second2.kill('SIGTERM');
  assert.is(await exited(second2), 0);
  // After a reboot its PID may belong to another program, even another node process: stale too.
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  others.add(other);
  await writeFile(path.join(dataDir, 'gateway.lock'), `${other.pid}\n`);
  const third = cli(['run', '--config', config], env(dataDir));
  let err = '';
  third.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const port3 = await waitReady(third);
  assert.is((await call(port3, '/api/v1/ok')).body.data, true);
  third.kill('SIGTERM');
  assert.is(await exited(third), 0, err);
  other.kill('SIGKILL');
});


test.run();
