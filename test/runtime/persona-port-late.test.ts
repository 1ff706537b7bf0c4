/**
 * An RTU persona whose serial port is not there when the gateway starts (a USB adapter plugged in after
 * boot): the gateway starts anyway, the server reports the port closed with the reason, and the slave keeps
 * trying with backoff; once the pty pair appears (socat started after the gateway) the pymodbus master on
 * its other end is answered. And one whose port goes away while served (socat stopped) and comes back.
 * Meanwhile GET /api/v1/health/shadow (real HTTP) says "degraded", naming the server, its port and why,
 * and "healthy" again once the port is open. The gateway runs as its own process, as in the field: in the
 * test runner's process, ports and pollers of hundreds of earlier tests share its event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { needs } from '../helpers/peers.js';
import { cli, exited, waitReady } from '../helpers/spawn.js';
import { kill, rigUnavailable, sleep, waitFor } from '../drivers/modbus-rig.js';
import { RtuMaster } from '../helpers/rtu-master.js';

const why = rigUnavailable();
const rigTest = needs(why, 'persona late port test');

interface SlaveStats { open: boolean; error: string | null; reopened: number; lost: number; answered: number }
interface Down { server: string; transport: string; port: string; reason: string }
/** The gateway process of a run: its HTTP port, and how to stop it. */
interface Gateway { httpPort: number; stop(): Promise<void> }
interface Health { status: string; checks: { modbusServers: Record<string, SlaveStats>; servers: { ok: boolean; down: Down[] } } }

async function serverUp(gw: Gateway): Promise<string | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  return text.split('\n').find((l) => l.startsWith('shadowgate_modbus_server_up{server="meter"}'))?.split(' ').at(-1);
}

async function health(gw: Gateway): Promise<Health> {
  const res = await fetch(`http://127.0.0.1:${gw.httpPort}/api/v1/health/shadow`, { signal: AbortSignal.timeout(5000) });
  return ((await res.json()) as { data: Health }).data;
}

const serverStats = async (gw: Gateway): Promise<SlaveStats> => (await health(gw)).checks.modbusServers['meter']!;

/** Polls the health report (bounded) until `ok` says it is the one wanted. */
async function healthUntil(gw: Gateway, what: string, ok: (h: Health) => boolean, timeoutMs: number): Promise<Health> {
  const deadline = Date.now() + timeoutMs;
  let h = await health(gw);
  while (!ok(h)) {
    if (Date.now() > deadline) assert.unreachable(`${what} within ${timeoutMs} ms: ${JSON.stringify(h)}`);
    await sleep(100);
    h = await health(gw);
  }
  return h;
}

const pair = (consumer: string, slavePort: string): ChildProcess =>
  spawn('socat', [`pty,raw,echo=0,link=${consumer}`, `pty,raw,echo=0,link=${slavePort}`], { stdio: 'ignore' });

function gatewayConfig(dir: string, slavePort: string): Record<string, unknown> {
  return {
    gateway: { id: 'persona-late', data_dir: path.join(dir, 'data'), log_level: 'info' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { source: { points: [{ name: 'power', type: 'float', access: 'R', sim: { fn: 'constant', value: 1234.5 } }] } },
    devices: [{ id: 'grid', model: 'source', bus: 'sim', poll: '500ms' }],
    servers: [{ id: 'meter', transport: 'rtu', port: slavePort, baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1,
      units: [{ unit: 2, persona: 'eastron-sdm630', bind: { total_power: 'grid.power' } }] }],
  };
}

/** Total power (FC 4, 0x34) read by the master at unit 2, as the SDM630 persona serves it. */
async function readPower(master: RtuMaster): Promise<number> {
  const r = await master.run({ op: 'read', fc: 4, unit: 2, address: 0x34, count: 2 });
  assert.ok(r.ok, JSON.stringify(r));
  const b = Buffer.alloc(4);
  b.writeUInt16BE(r.regs![0]!, 0);
  b.writeUInt16BE(r.regs![1]!, 2);
  return b.readFloatBE(0);
}

/** One run: a temp dir, the pty pair's two paths, and what the test starts there, all stopped and removed after. */
interface Run { dir: string; consumer: string; slavePort: string; socat: ChildProcess | null; gw: Gateway | null; master: RtuMaster }

async function inRun(prefix: string, body: (run: Run) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const run: Run = { dir, consumer: path.join(dir, 'ttyA'), slavePort: path.join(dir, 'ttyB'), socat: null, gw: null, master: new RtuMaster() };
  try {
    await body(run);
  } finally {
    await run.master.stop();
    await run.gw?.stop();
    await kill(run.socat);
    await rm(dir, { recursive: true, force: true });
  }
}

/** The pair appears (the adapter is plugged in) under the run's two paths. */
async function plug(run: Run): Promise<void> {
  run.socat = pair(run.consumer, run.slavePort);
  await waitFor('socat links', () => existsSync(run.consumer) && existsSync(run.slavePort), 5000);
}

async function startRun(run: Run): Promise<Gateway> {
  const file = path.join(run.dir, 'config.json');
  await writeFile(file, JSON.stringify(gatewayConfig(run.dir, run.slavePort)));
  const child = cli(['run', '--config', file]);
  const httpPort = await waitReady(child);
  // Its log is not read after "ready": keep the pipes flowing so the process never blocks on them.
  child.stdout!.resume();
  child.stderr!.resume();
  run.gw = {
    httpPort,
    stop: async () => {
      child.kill('SIGTERM');
      await exited(child).catch(() => child.kill('SIGKILL'));
    },
  };
  return run.gw;
}

/** A fresh master on the consumer's end reads the persona: the source's 1234.5 W. */
async function consumerReads(run: Run): Promise<void> {
  await run.master.stop();
  run.master = new RtuMaster();
  await run.master.start(run.consumer);
  assert.is(await readPower(run.master), 1234.5);
}

rigTest('a persona port missing at start is opened once it appears, and answered', () => inRun('sg-persona-late-', async (run) => {
  const gw = await startRun(run);
  const before = await serverStats(gw);
  assert.is(before.open, false);
  assert.match(String(before.error), /No such file|ENOENT|cannot open/i);
  assert.is(await serverUp(gw), '0', 'down while the port is missing');
  // The simulated source is online from its first poll: only the missing port can degrade the report.
  const missing = await healthUntil(gw, 'the source online', (h) => h.checks.servers.down.length > 0 && !JSON.stringify(h).includes('"onlineDevices":0'), 5000);
  assert.is(missing.status, 'degraded');
  assert.is(missing.checks.servers.ok, false);
  assert.equal(missing.checks.servers.down.map((d) => [d.server, d.transport, d.port]), [['meter', 'rtu', run.slavePort]]);
  assert.match(missing.checks.servers.down[0]!.reason, /No such file|ENOENT|cannot open/i);
  await sleep(1500); // a few attempts fail meanwhile (250, 500, 1000 ms apart)
  await plug(run);
  // The backoff has grown to 2 s by now and is capped at 5 s: the port opens within that.
  const open = await healthUntil(gw, 'the slave opened its port', (h) => h.checks.modbusServers['meter']!.open, 10_000);
  assert.is(open.checks.modbusServers['meter']!.error, null);
  assert.is(await serverUp(gw), '1');
  assert.equal([open.status, open.checks.servers], ['healthy', { ok: true, down: [] }]);
  await consumerReads(run);
}));

rigTest('a persona port that goes away degrades /health/shadow (server, port, reason) until it is back and answered', () => inRun('sg-persona-gone-', async (run) => {
  await plug(run);
  const gw = await startRun(run);
  await healthUntil(gw, 'healthy with the port open', (h) => h.status === 'healthy', 5000);
  await consumerReads(run);
  await run.master.stop();

  // The adapter is unplugged: both ends of the pair vanish.
  await kill(run.socat);
  run.socat = null;
  const gone = await healthUntil(gw, 'degraded after the port went away', (h) => h.status === 'degraded', 5000);
  assert.equal(gone.checks.servers.down.map((d) => [d.server, d.transport, d.port]), [['meter', 'rtu', run.slavePort]]);
  // Right after the close, or after the first failed attempt to open it again (the device node is gone).
  assert.match(gone.checks.servers.down[0]!.reason, /closed|No such file|ENOENT|cannot open/i);
  assert.is(gone.checks.modbusServers['meter']!.lost, 1);
  await sleep(1000);
  const still = await health(gw);
  assert.is(still.status, 'degraded', 'stays degraded while the port is away');
  assert.match(still.checks.servers.down[0]!.reason, /No such file|ENOENT|cannot open/i);

  // Plugged in again: the same path comes back, the slave opens it (backoff up to 5 s) and health recovers.
  await plug(run);
  const back = await healthUntil(gw, 'healthy once the port is back', (h) => h.status === 'healthy', 10_000);
  assert.equal(back.checks.servers, { ok: true, down: [] });
  assert.is(back.checks.modbusServers['meter']!.reopened, 1);
  await consumerReads(run);
}));

test.run();
