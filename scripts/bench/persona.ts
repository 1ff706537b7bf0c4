/**
 * An RTU persona polled like an inverter polls its meter: the gateway (in this process) serves the library
 * SDM630 as unit 2 on one end of a socat pty pair, fed by a simulator device polled every second; a Python
 * master (scripts/bench/persona_master.py: pyserial, pymodbus' CRC) on the other end reads the total-power
 * block (input 0x34, 2 registers) every 200 ms. It counts timeouts and CRC errors and times request end
 * (written and drained) to reply start (first byte read) at the master. A pty has no wire time: the figure
 * is the gateway's own turnaround plus the t3.5 it waits, not the 9600-baud bytes.
 * Knobs: PERSONA_BENCH_WINDOW_S (60; 600 for the 10-minute soak). Run alone:
 * `node --import tsx scripts/bench/persona.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { killChild, rigUnavailable, sleep, waitFor } from './modbus-bus/rig.js';
import type { Result } from './report.js';

const WINDOW_S = Number(process.env.PERSONA_BENCH_WINDOW_S ?? 60);
const BAUD = 9600;
const T35_MS = 3.5 * 11_000 / BAUD;
const POLL_S = 0.2;
const PYTHON = '/usr/bin/python3';

interface MasterSummary {
  requests: number; answers: number; timeouts: number; crc_errors: number; exceptions: number; wrong: number;
  p50_ms: number | null; p99_ms: number | null; min_ms: number | null; max_ms: number | null;
}

function runMaster(port: string): Promise<MasterSummary> {
  const master = spawn(PYTHON, [fileURLToPath(new URL('./persona_master.py', import.meta.url)), port, '2', '4', String(0x34), '2', String(POLL_S), String(WINDOW_S)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  master.stdout.on('data', (d: Buffer) => (out += d));
  master.stderr.on('data', (d: Buffer) => (err += d));
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => { void killChild(master as ChildProcess); reject(new Error('the master did not finish')); }, (WINDOW_S + 30) * 1000);
    master.once('exit', (code) => {
      clearTimeout(guard);
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').at(-1)!) as MasterSummary);
      else reject(new Error(`persona_master.py exited ${code}: ${err}`));
    });
  });
}

export async function benchPersona(): Promise<Result[]> {
  const why = rigUnavailable();
  if (why) {
    console.log(`SKIP persona bench: ${why}`);
    return [];
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-persona-bench-'));
  const consumer = path.join(dir, 'ttyA');
  const slavePort = path.join(dir, 'ttyB');
  const socat = spawn('socat', [`pty,raw,echo=0,link=${consumer}`, `pty,raw,echo=0,link=${slavePort}`], { stdio: 'ignore' });
  const raw = {
    gateway: { id: 'persona-bench', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { source: { points: [{ name: 'power', type: 'float', access: 'R', sim: { fn: 'sine', min: -3000, max: 3000, period: '30s' } }] } },
    devices: [{ id: 'grid', model: 'source', bus: 'sim', poll: '1s' }],
    servers: [{ id: 'meter', transport: 'rtu', port: slavePort, baud_rate: BAUD, parity: 'none', data_bits: 8, stop_bits: 1,
      units: [{ unit: 2, persona: 'eastron-sdm630', max_age: '3s', bind: { total_power: 'grid.power' } }] }],
  };
  try {
    await waitFor('socat links', () => existsSync(consumer) && existsSync(slavePort), 5000);
    const gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    try {
      await sleep(1500); // the source has a sample
      console.log(`config: SDM630 persona, unit 2, RTU ${BAUD} 8N1 on a socat pty pair (no wire time); t3.5 = ${T35_MS.toFixed(2)} ms; ` +
        `master polls FC4 0x34 x2 every ${POLL_S * 1000} ms for ${WINDOW_S} s; source: simulator, polled every 1 s, max_age 3 s`);
      const m = await runMaster(consumer);
      console.log(`master: ${m.requests} requests, ${m.answers} answers, ${m.timeouts} timeouts, ${m.crc_errors} CRC errors, ` +
        `${m.exceptions} exceptions, reply min ${m.min_ms?.toFixed(2)} / p50 ${m.p50_ms?.toFixed(2)} / p99 ${m.p99_ms?.toFixed(2)} / max ${m.max_ms?.toFixed(2)} ms`);
      const note = `${m.requests} polls every ${POLL_S * 1000} ms, ${WINDOW_S} s, t3.5 ${T35_MS.toFixed(2)} ms`;
      return [
        { name: 'persona RTU: timeouts', measured: m.timeouts, target: 0, unit: '', higherIsBetter: false, note },
        { name: 'persona RTU: CRC errors', measured: m.crc_errors, target: 0, unit: '', higherIsBetter: false, note },
        { name: 'persona RTU: reply p50 (request end -> reply start, master side)', measured: m.p50_ms ?? NaN, target: 20, unit: 'ms', higherIsBetter: false, note },
        { name: 'persona RTU: reply p99', measured: m.p99_ms ?? NaN, target: 20, unit: 'ms', higherIsBetter: false, note },
        { name: 'persona RTU: fastest reply (never before t3.5)', measured: m.min_ms ?? NaN, target: T35_MS, unit: 'ms', higherIsBetter: true, note },
      ];
    } finally {
      await gw.stop();
    }
  } finally {
    await killChild(socat);
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report(await benchPersona());
}
