/**
 * The gateway on the bench bus, started as the systemd unit starts it: `node <the unit's flags>` on the
 * release bundle (or dist/main.js with the same flags when no bundle was built), a config of its own in a
 * temp dir, the shipped defaults (history on, persistence every 10 s, MQTT on) plus HA discovery.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { unitEnvironment, unitNodeFlags } from '../../unit.js';
import { killChild } from './rig.js';

/** The unit's node flags, read from its ExecStart so the bench follows it (scripts/unit.ts). */
export const unitFlags = (): string[] => unitNodeFlags();

export const BUNDLE = path.resolve('build/shadowgate/shadowgate.mjs');
export const MAIN = path.resolve('dist/main.js');

/**
 * What runs: the release bundle when it was built (`make dist`), else the tsc build. The bundle's tree is
 * copied into `dir` first: the checkout is shared, and a `make dist` elsewhere during the bench must not
 * swap the code between runs (or under the profile's line numbers). The label names the build (hash, time).
 */
export function snapshotEntry(dir: string): { file: string; label: string } {
  const bundled = existsSync(BUNDLE);
  let file = MAIN;
  if (bundled) {
    cpSync(path.dirname(BUNDLE), path.join(dir, 'shadowgate'), { recursive: true });
    file = path.join(dir, 'shadowgate', path.basename(BUNDLE));
  }
  const id = `sha256 ${createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 12)}, built ${statSync(bundled ? BUNDLE : MAIN).mtime.toISOString()}`;
  return bundled ? { file, label: `release bundle build/shadowgate/shadowgate.mjs (${id})` }
    : { file, label: `dist/main.js (${id}; no release bundle: run \`make dist\`)` };
}

export interface BenchDevice { id: string; model: string; image: string; unit: number }

export interface GatewayConfigInput {
  dataDir: string;
  port: string;
  baud: number;
  devices: readonly BenchDevice[];
  poll: string;
  mqttPort: number;
  wsPort: number;
}

export async function writeGatewayConfig(file: string, c: GatewayConfigInput): Promise<void> {
  const config = {
    gateway: { id: 'busbench', data_dir: c.dataDir, log_level: 'info' },
    http: { host: '127.0.0.1', port: 0 },
    // enable, history and persist_interval are left to their defaults; discovery is switched on.
    mqtt: { host: '127.0.0.1', port: c.mqttPort, ws_port: c.wsPort, homeassistant: { enable: true } },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: c.port, baud_rate: c.baud }],
    devices: c.devices.map((d) => ({ id: d.id, model: d.model, bus: 'rs485', unit_id: d.unit, poll: c.poll })),
  };
  await writeFile(file, JSON.stringify(config, null, 1));
}

export interface RunningGateway {
  child: ChildProcess;
  pid: number;
  port: number;
  /** performance.now() at spawn */
  spawnedAt: number;
  /** log lines by level since start */
  logLevels: Map<string, number>;
  /** GC events, when started with --trace-gc (ms since the isolate started) */
  gc: GcEvent[];
  alive(): boolean;
  stop(): Promise<void>;
}

export interface GcEvent { atMs: number; kind: string; freedMb: number; pauseMs: number }

/** `[pid:0x…]  1234 ms: Scavenge 3.9 (4.0) -> 3.0 (5.0) MB, 0.34 / 0.00 ms  (…` */
const GC_LINE = /\]\s+(\d+) ms: ([A-Za-z-]+)[^\d]*([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, ([\d.]+) \/ ([\d.]+) ms/;

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export function startGateway(file: string, configFile: string, extraFlags: string[] = [], timeoutMs = 30_000): Promise<RunningGateway> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...unitFlags(), ...extraFlags, file, 'run', '--config', configFile],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...unitEnvironment() } });
  const logLevels = new Map<string, number>();
  const gc: GcEvent[] = [];
  let errTail = '';
  child.stderr!.on('data', (d: Buffer) => (errTail = (errTail + d.toString()).slice(-1000)));
  const stop = (): Promise<void> => killChild(child, 20_000); // the unit's TimeoutStopSec
  return new Promise((resolve, reject) => {
    let partial = '';
    let ready = false;
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`gateway did not get ready within ${timeoutMs} ms; stderr: ${errTail}`));
    }, timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        let rec: { level?: number; msg?: string; httpPort?: number };
        try {
          rec = JSON.parse(line) as typeof rec;
        } catch {
          const m = GC_LINE.exec(line);
          if (m) gc.push({ atMs: Number(m[1]), kind: m[2]!, freedMb: Number(m[3]) - Number(m[4]), pauseMs: Number(m[5]) });
          continue;
        }
        const level = LEVELS[rec.level ?? 30] ?? String(rec.level);
        logLevels.set(level, (logLevels.get(level) ?? 0) + 1);
        if (!ready && rec.msg === 'ready') {
          ready = true;
          clearTimeout(timer);
          resolve({ child, pid: child.pid!, port: rec.httpPort!, spawnedAt, logLevels, gc, alive: () => child.exitCode === null && child.signalCode === null, stop });
        }
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`gateway exited early (${code ?? signal}); stderr: ${errTail}`));
    });
  });
}

/** The gateway's own request counters: bus total and per Modbus unit, from /metrics. */
export async function busCounters(port: number): Promise<{ bus: number; units: Map<string, number>; rss: number }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  const units = new Map<string, number>();
  let bus = NaN;
  let rss = NaN;
  for (const line of text.split('\n')) {
    let m = /^shadowgate_bus_requests_total\{bus="rs485"\} (\S+)$/.exec(line);
    if (m) bus = Number(m[1]);
    m = /^shadowgate_modbus_unit_requests_total\{bus="rs485",unit="([^"]+)"\} (\S+)$/.exec(line);
    if (m) units.set(m[1]!, Number(m[2]));
    m = /^process_resident_memory_bytes (\S+)$/.exec(line);
    if (m) rss = Number(m[1]);
  }
  if (!Number.isFinite(bus)) throw new Error(`no shadowgate_bus_requests_total for rs485 in /metrics:\n${text.slice(0, 2000)}`);
  return { bus, units, rss };
}

/** The gateway's V8 heap (used, total), MB, from /api/v1/system; null when this build does not report it. */
export async function heapOf(port: number): Promise<{ used: number; total: number } | null> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/system`, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) return null;
  const mem = ((await res.json()) as { data?: { memory?: { heapUsed?: number; heapTotal?: number } } }).data?.memory;
  return mem?.heapUsed && mem.heapTotal ? { used: mem.heapUsed / 2 ** 20, total: mem.heapTotal / 2 ** 20 } : null;
}
