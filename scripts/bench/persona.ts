/**
 * An RTU persona polled like an inverter polls its meter. The gateway (in this process) reads an SDM120 on
 * its own 9600-baud RS-485 bus (the bus rig: socat ptys, the baud relay, live_devices.py redrawing the
 * meter's values every second) and serves the library SDM630 as unit 2 on one end of a socat pty pair,
 * its total power bound to the meter's. A Python master (scripts/bench/persona_master.py: pyserial,
 * pymodbus' CRC) on the other end reads the total-power block (input 0x34, 2 registers). It counts timeouts
 * and CRC errors and times request end (written and drained) to reply start (first byte read). A pty has no
 * wire time: the figure is the gateway's own turnaround plus the t3.5 it waits, not the 9600-baud bytes.
 *  1. Quiet owner: the master polls every 200 ms for the window.
 *  2. Lag: the master polls every 10 ms and prints each answer; each change of the meter's power in the
 *     shadow is matched to the first answer carrying it. The master's time.monotonic() and this process's
 *     hrtime read the same clock (CLOCK_MONOTONIC). The device side adds at most one source poll (1 s).
 *  3. Loaded owner: the gateway again, now with a dead (silent) unit configured on the owner's bus, and
 *     front-door TCP clients (a child process, 2 per unit at 20 requests/s each) reading through it, every
 *     read a bus frame (max_age 1 ms), half of them for the dead unit; the same 200 ms master for the
 *     window. The goal is the persona's p99 moving by at most 5 ms.
 * Knobs: PERSONA_BENCH_WINDOW_S (60 per phase; 600 for the 10-minute soak), PERSONA_BENCH_LAG_S (15),
 * PERSONA_BENCH_DOOR_HZ (20; a large number: each client as fast as it is answered).
 * Run alone: `node --import tsx scripts/bench/persona.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort } from '../../test/drivers/modbus-rig.js';
import { read } from '../../test/helpers/modbus-tcp-client.js';
import { BusRig, killChild, rigUnavailable, sleep, waitFor } from './modbus-bus/rig.js';
import { lagFigures, runMaster, type MasterSummary } from './persona-master.js';
import type { Result } from './report.js';

const WINDOW_S = Number(process.env.PERSONA_BENCH_WINDOW_S ?? 60);
const LAG_S = Number(process.env.PERSONA_BENCH_LAG_S ?? 15);
const BAUD = 9600;
const T35_MS = 3.5 * 11_000 / BAUD;
const POLL_S = 0.2;
const SOURCE_POLL_MS = 1000;
/** Each door client's request rate (the front-door bench's clients read 20 times a second). */
const DOOR_HZ = Number(process.env.PERSONA_BENCH_DOOR_HZ ?? 20);
const DOOR_CLIENTS = 2;
const TOTAL_POWER = 0x34;

interface Phase {
  gw: Gateway;
  consumer: string;
  stop(): Promise<void>;
}

/** A gateway with the persona on a fresh pty pair; `loaded` adds the dead unit (and its door unit). */
async function startPhase(rig: BusRig, doorPort: number, loaded: boolean): Promise<Phase> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-persona-bench-'));
  const consumer = path.join(dir, 'ttyA');
  const slavePort = path.join(dir, 'ttyB');
  const socat = spawn('socat', [`pty,raw,echo=0,link=${consumer}`, `pty,raw,echo=0,link=${slavePort}`], { stdio: 'ignore' });
  const raw = {
    gateway: { id: 'persona-bench', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: BAUD }],
    devices: [
      { id: 'grid', model: 'eastron-sdm120', bus: 'rs485', unit_id: 1, poll: `${SOURCE_POLL_MS}ms` },
      ...(loaded ? [{ id: 'dead', model: 'eastron-sdm120', bus: 'rs485', unit_id: 9, poll: '1s' }] : []),
    ],
    servers: [
      { id: 'meter', transport: 'rtu', port: slavePort, baud_rate: BAUD, parity: 'none', data_bits: 8, stop_bits: 1,
        units: [{ unit: 2, persona: 'eastron-sdm630', max_age: '3s', bind: { total_power: 'grid.active_power' } }] },
      { id: 'door', transport: 'tcp', host: '127.0.0.1', port: doorPort,
        units: [{ unit: 1, device: 'grid', max_age: '1ms' }, ...(loaded ? [{ unit: 9, device: 'dead', max_age: '1ms' }] : [])] },
    ],
  };
  let gw: Gateway | null = null;
  const stop = async (): Promise<void> => {
    await gw?.stop();
    await killChild(socat);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitFor('socat links', () => existsSync(consumer) && existsSync(slavePort), 5000);
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    await sleep(2500); // the source has samples
    return { gw, consumer, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Front-door clients reading the owner's bus through the gateway for `windowS`, in a child process. */
function doorLoad(port: number, windowS: number): { child: ChildProcess; done: Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./persona-door-load.ts', import.meta.url)),
    JSON.stringify({ port, units: [1, 9], clientsPerUnit: DOOR_CLIENTS, rateHz: DOOR_HZ, windowS, block: read(4, 0x0c, 2) })], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  const done = new Promise<string>((resolve) => child.once('close', () => resolve(out.trim())));
  return { child, done };
}

/**
 * The slave's own figures (request's last byte heard -> answer handed to the port) and the gateway's worst
 * event-loop delay (a stall delays hearing the request, which the slave's figure cannot see), from /health/shadow.
 */
async function slaveStats(gw: Gateway): Promise<{ replyMsMin: number | null; replyMsMax: number; loopMaxMs: number }> {
  const res = await fetch(`http://127.0.0.1:${gw.httpPort}/api/v1/health/shadow`, { signal: AbortSignal.timeout(5000) });
  const { checks } = ((await res.json()) as { data: { checks: {
    modbusServers: Record<string, { replyMsMin: number | null; replyMsMax: number }>; eventLoop: { maxMs: number } } } }).data;
  return { ...checks.modbusServers['meter']!, loopMaxMs: checks.eventLoop.maxMs };
}

const line = (label: string, m: MasterSummary): string => `${label}: ${m.requests} requests, ${m.answers} answers, ${m.timeouts} timeouts, ` +
  `${m.crc_errors} CRC errors, ${m.exceptions} exceptions, reply min ${m.min_ms?.toFixed(2)} / p50 ${m.p50_ms?.toFixed(2)} / ` +
  `p99 ${m.p99_ms?.toFixed(2)} / max ${m.max_ms?.toFixed(2)} ms`;

export async function benchPersona(): Promise<Result[]> {
  const why = rigUnavailable();
  if (why) {
    console.log(`SKIP persona bench: ${why}`);
    return [];
  }
  const rig = new BusRig('sdm120:1', BAUD, 1);
  await rig.start();
  const doorPort = await freePort();
  const master = { unit: 2, fc: 4, address: TOTAL_POWER, count: 2 };
  try {
    console.log(`config: SDM630 persona, unit 2, RTU ${BAUD} 8N1 on a socat pty pair (no wire time); t3.5 = ${T35_MS.toFixed(2)} ms; ` +
      `master polls FC4 0x34 x2 every ${POLL_S * 1000} ms for ${WINDOW_S} s per phase; source: an SDM120 (live values) on a ${BAUD}-baud ` +
      `bus, polled every ${SOURCE_POLL_MS} ms, max_age 3 s`);
    let quiet: MasterSummary;
    let slaveSide: Awaited<ReturnType<typeof slaveStats>>;
    let lag: ReturnType<typeof lagFigures>;
    const one = await startPhase(rig, doorPort, false);
    try {
      quiet = (await runMaster(one.consumer, { ...master, intervalS: POLL_S, durationS: WINDOW_S })).summary;
      slaveSide = await slaveStats(one.gw);
      console.log(line('quiet owner', quiet));
      console.log(`gateway side (last byte heard -> answer written): min ${slaveSide.replyMsMin?.toFixed(2)} / max ${slaveSide.replyMsMax.toFixed(2)} ms; ` +
        `event loop delay max ${slaveSide.loopMaxMs} ms`);
      const changes: { value: number; t: number }[] = [];
      let last: unknown;
      const owner = {};
      one.gw.shadow.bus.on(owner, 'dataChange', (e) => {
        if (e.id !== 'grid') return;
        // What the persona serves: the unrounded value (the shadow's own is rounded to the model's decimals).
        const v = one.gw.shadow.GetExactPoint('grid', 'active_power');
        if (typeof v === 'number' && v !== last) changes.push({ value: Math.fround(v), t: Number(process.hrtime.bigint()) / 1e9 });
        last = v;
      });
      const traced = await runMaster(one.consumer, { ...master, intervalS: 0.01, durationS: LAG_S, trace: true });
      one.gw.shadow.bus.off(owner);
      lag = lagFigures(changes, traced.trace);
      console.log(`lag: ${lag.matched} source changes in ${LAG_S} s matched (${lag.unmatched} never served), shadow -> persona answer ` +
        `p50 ${lag.p50.toFixed(1)} / max ${lag.max.toFixed(1)} ms; from the device: + at most one poll (${SOURCE_POLL_MS} ms)`);
    } finally {
      await one.stop();
    }
    let loaded: MasterSummary;
    let loadedSide: Awaited<ReturnType<typeof slaveStats>>;
    let doorText = '';
    const two = await startPhase(rig, doorPort, true);
    try {
      const load = doorLoad(doorPort, WINDOW_S + 8);
      try {
        await sleep(3000); // the door clients are on the bus
        loaded = (await runMaster(two.consumer, { ...master, intervalS: POLL_S, durationS: WINDOW_S })).summary;
        doorText = await Promise.race([load.done, sleep(30_000).then(() => 'the door clients did not finish')]);
      } finally {
        await killChild(load.child);
      }
      loadedSide = await slaveStats(two.gw);
      console.log(line('dead unit + door load', loaded));
      console.log(`gateway side: min ${loadedSide.replyMsMin?.toFixed(2)} / max ${loadedSide.replyMsMax.toFixed(2)} ms; event loop delay max ${loadedSide.loopMaxMs} ms`);
      console.log(`door clients (per unit): ${doorText}`);
    } finally {
      await two.stop();
    }
    const note = `${quiet.requests} polls every ${POLL_S * 1000} ms, ${WINDOW_S} s, t3.5 ${T35_MS.toFixed(2)} ms`;
    const moved = (loaded.p99_ms ?? NaN) - (quiet.p99_ms ?? NaN);
    console.log(`persona p99: quiet owner ${quiet.p99_ms?.toFixed(2)} ms, dead unit + door load ${loaded.p99_ms?.toFixed(2)} ms, ` +
      `moved ${moved.toFixed(2)} ms (goal <= 5 ms); gateway side max ${slaveSide.replyMsMax.toFixed(2)} -> ${loadedSide.replyMsMax.toFixed(2)} ms`);
    return [
      { name: 'persona RTU: timeouts', measured: quiet.timeouts, target: 0, unit: '', higherIsBetter: false, note },
      { name: 'persona RTU: CRC errors', measured: quiet.crc_errors, target: 0, unit: '', higherIsBetter: false, note },
      { name: 'persona RTU: reply p50 (request end -> reply start, master side)', measured: quiet.p50_ms ?? NaN, target: 20, unit: 'ms', higherIsBetter: false, note },
      { name: 'persona RTU: reply p99', measured: quiet.p99_ms ?? NaN, target: 20, unit: 'ms', higherIsBetter: false, note },
      { name: 'persona RTU: fastest reply (never before t3.5)', measured: quiet.min_ms ?? NaN, target: T35_MS, unit: 'ms', higherIsBetter: true, note },
      { name: 'persona RTU: fastest reply, gateway side (last byte heard -> written)', measured: slaveSide.replyMsMin ?? NaN, target: T35_MS, unit: 'ms', higherIsBetter: true,
        note: 'the master\'s figure can come out shorter on a loaded host (its own clock read late after the write)' },
      { name: 'persona: source change in the shadow -> persona answer, max', measured: lag.max, target: 50, unit: 'ms', higherIsBetter: false,
        note: `${lag.matched} changes, master every 10 ms (up to 10 ms of it is the master's sampling); the device side adds at most one poll (${SOURCE_POLL_MS} ms)` },
      { name: 'persona: source changes never served', measured: lag.unmatched, target: 0, unit: '', higherIsBetter: false, note: `${LAG_S} s` },
      { name: 'persona RTU p99 moved by a dead unit + door load on the owner\'s bus', measured: moved, target: 5, unit: 'ms', higherIsBetter: false,
        note: `p99 ${quiet.p99_ms?.toFixed(2)} -> ${loaded.p99_ms?.toFixed(2)} ms; door: ${DOOR_CLIENTS} clients x ${DOOR_HZ}/s each on unit 1 (every read a bus frame) and dead unit 9` },
      { name: 'persona RTU: slowest reply moved by owner load, gateway side (last byte heard -> written)', measured: loadedSide.replyMsMax - slaveSide.replyMsMax, target: 5, unit: 'ms', higherIsBetter: false,
        note: `max ${slaveSide.replyMsMax.toFixed(2)} -> ${loadedSide.replyMsMax.toFixed(2)} ms: the gateway's own part, without the master's and the pty's scheduling` },
      { name: 'persona RTU: timeouts under owner load', measured: loaded.timeouts, target: 0, unit: '', higherIsBetter: false, note: `${loaded.requests} polls` },
    ];
  } finally {
    await rig.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report(await benchPersona());
}
