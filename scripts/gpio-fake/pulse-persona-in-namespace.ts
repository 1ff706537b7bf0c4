/**
 * A persona fed by a GPIO pulse counter, end to end: the config of board/examples/gpio-s0-persona.json
 * (an S0 meter on P1-11 counted by the gpio driver, served as an Eastron SDM120 on Modbus TCP) run by
 * `node --import tsx src/main.ts run` against the fake GPIO kernel, read by a Modbus TCP master. The
 * gateway is then killed (a power cut) and started again on the same data dir after more than the
 * device TTL: the total must go on from the persisted value.
 * Run as: unshare -m --propagation private node --import tsx scripts/gpio-fake/pulse-persona-in-namespace.ts <workDir>
 * Prints one JSON line for test/integration/gpio-pulse-persona.test.ts. Never run it outside a fresh mount
 * namespace: it mounts a tmpfs over /sys/class (it refuses when it is not in one).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RawModbusClient, read } from '../../test/helpers/modbus-tcp-client.js';
import { GPIO, runThrowaway, sleep, waitFor, withFakeKernel } from './namespace.js';

const [workDir] = process.argv.slice(2);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
// Pi 4 on kernel 6.6+: pinctrl-bcm2711 at base 512; the S0 input is P1-11 = BCM 17.
const S0_VALUE = `${GPIO}/gpio${512 + 17}/value`;

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const srv = createServer();
  srv.once('error', reject);
  srv.listen(0, '127.0.0.1', () => {
    const { port } = srv.address() as { port: number };
    srv.close(() => resolve(port));
  });
});

interface Running { child: ChildProcess; httpPort: number; exited: Promise<unknown>; out: () => string }
const running: Running[] = [];

/** `main.ts run` on the config; resolves at its ready line. */
async function startGateway(configFile: string, dataDir: string): Promise<Running> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/main.ts'), 'run', '--config', configFile], {
    cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0' },
  });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  let gone: unknown;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((gone = { code, signal }))));
  const run: Running = { child, httpPort: 0, exited, out: () => text.slice(-4000) };
  running.push(run);
  const ready = await waitFor('the gateway\'s ready line', () => {
    if (gone) throw new Error(`gateway exited early: ${JSON.stringify(gone)}\n${text.slice(-2000)}`);
    for (const line of text.split('\n')) {
      try {
        const entry = JSON.parse(line);
        if (entry.msg === 'ready') return entry;
      } catch {
        // Not a log line.
      }
    }
    return undefined;
  }, 10_000);
  run.httpPort = ready.httpPort;
  return run;
}

/**
 * `n` S0 pulses: the transistor pulls the line low for 200 ms, then releases it for 200 ms. Longer than a real
 * meter's 30–100 ms on purpose: the fake sysfs has no interrupts, so the line is sampled, and a loaded CI
 * machine must not make the gateway sleep through a whole pulse.
 */
async function pulses(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    writeFileSync(S0_VALUE, '0\n');
    await sleep(200);
    writeFileSync(S0_VALUE, '1\n');
    await sleep(200);
  }
}

const float32 = (words: number[]): number => {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(words[0]!, 0);
  b.writeUInt16BE(words[1]!, 2);
  return b.readFloatBE(0);
};

let tid = 1;
/** An SDM120 float (FC 4) from the persona; 'silent' when it does not answer within 1.5 s. */
async function readFloat(client: RawModbusClient, address: number): Promise<number | 'silent' | string> {
  try {
    const answer = await client.request(tid++ & 0xffff, 1, read(4, address, 2), 1500);
    if (answer.pdu[0] !== 4) return `exception ${answer.pdu[1]}`;
    return float32([(answer.pdu[2]! << 8) | answer.pdu[3]!, (answer.pdu[4]! << 8) | answer.pdu[5]!]);
  } catch (e) {
    if (/no answer/.test((e as Error).message)) return 'silent';
    throw e;
  }
}

async function pointValue(run: Running, point: string): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${run.httpPort}/api/v1/shadow/devicePoint?id=house&point=${point}`, { signal: AbortSignal.timeout(2000) });
  return ((await res.json()) as { data?: { value?: unknown } }).data?.value;
}

async function exercise(result: Record<string, unknown>): Promise<Record<string, unknown>> {
  // The user's config as shipped; added: the board (no device tree here), a free port, and a short TTL and
  // persist interval so that the restart below comes after the TTL within a test's time.
  const config = JSON.parse(readFileSync(path.join(REPO, 'board/examples/gpio-s0-persona.json'), 'utf8'));
  const port = await freePort();
  config.gateway = { ...config.gateway, board: 'rpi-4b' };
  config.shadow = { persist_interval: '500ms' };
  config.devices[0].ttl = '2s';
  config.servers[0] = { ...config.servers[0], host: '127.0.0.1', port };
  const configFile = path.join(workDir!, 'config.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const dataDir = path.join(workDir!, 'data');

  let gw = await startGateway(configFile, dataDir);
  // The gateway's ready line can come before its GPIO bus has exported the line (a loaded machine showed it).
  await waitFor('the S0 line exported by the gateway', () => (existsSync(S0_VALUE) ? true : undefined), 10_000);
  // The S0 transistor is off: the pull-up holds the line high (the fake kernel exports it low).
  writeFileSync(S0_VALUE, '1\n');
  let client = await RawModbusClient.open(port);
  // No pulse yet, so no power: the persona must not serve a made-up 0 W.
  result.beforePulses = await readFloat(client, 72);
  await pulses(10);
  await sleep(1300); // one device poll (1 s) reports the total with its rate
  result.first = { importEnergy: await readFloat(client, 72), totalEnergy: await readFloat(client, 342), power: await readFloat(client, 12) };
  result.firstShadow = await pointValue(gw, 'energy');
  client.close();

  // Power cut: SIGKILL after at least one save (persist_interval 500 ms), then off for longer than the TTL.
  await sleep(1200);
  gw.child.kill('SIGKILL');
  await gw.exited;
  await sleep(2500);
  gw = await startGateway(configFile, dataDir);
  result.restoredShadow = await waitFor('the counter\'s first report', async () => {
    const v = await pointValue(gw, 'energy');
    return typeof v === 'number' ? v : undefined;
  });
  client = await RawModbusClient.open(port);
  // Back with the total but no rate yet (two pulses needed): silent again rather than 0 W.
  result.afterRestartBeforePulses = await readFloat(client, 72);
  await pulses(5);
  await sleep(1300);
  result.second = { importEnergy: await readFloat(client, 72), totalEnergy: await readFloat(client, 342), power: await readFloat(client, 12) };
  client.close();

  gw.child.kill('SIGTERM');
  result.exit = await Promise.race([gw.exited, sleep(5000).then(() => 'no exit within 5 s')]);
  return result;
}

async function main(): Promise<Record<string, unknown>> {
  if (!workDir) throw new Error('usage: pulse-persona-in-namespace.ts <workDir>');
  const partial: Record<string, unknown> = {};
  return withFakeKernel('pi4', 40_000, async () => {
    try {
      return await exercise(partial);
    } catch (e) {
      return { ...partial, error: String((e as Error).stack ?? e), gateway: running.at(-1)?.out() };
    } finally {
      for (const run of running) {
        const { pid, exitCode, signalCode } = run.child;
        if (pid !== undefined && exitCode === null && signalCode === null) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Already gone.
          }
        }
      }
    }
  });
}

runThrowaway(main, 35_000, () => {
  for (const run of running) {
    try {
      if (run.child.pid !== undefined) process.kill(run.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return { gateway: running.at(-1)?.out() };
});
