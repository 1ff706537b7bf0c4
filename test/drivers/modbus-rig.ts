/**
 * Test rig: a socat pty pair with the independent pymodbus slave (scripts/modbus-rig/slave.py) on one
 * end. Every process is started here and killed by PID in stop(); links live in a unique temp dir.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BusConfig, ModelConfig, PointConfig, ResolvedDevice } from '../../src/config/types.js';
import { systemClock } from '../../src/core/clock.js';
import type { DataSink, DriverContext, RawValue } from '../../src/drivers/types.js';
import { silentLogger } from '../../src/util/logger.js';

const PYTHON = '/usr/bin/python3';
const SLAVE = 'scripts/modbus-rig/slave.py';

/** Why the rig cannot run here, or null when it can. */
export function rigUnavailable(): string | null {
  if (spawnSync('socat', ['-V']).status !== 0) return 'socat is not installed (apt-get install socat)';
  if (spawnSync(PYTHON, ['-c', 'import pymodbus']).status !== 0) return 'python3-pymodbus is not installed';
  return null;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what: string, fn: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** SIGTERM by PID, SIGKILL after 1.5 s; resolves once the child is gone. */
export function kill(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => { try { process.kill(child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 1500);
    child.once('exit', () => { clearTimeout(hard); resolve(); });
    try { process.kill(child.pid!, 'SIGTERM'); } catch { clearTimeout(hard); resolve(); }
  });
}

/** A socat pty pair linked at `a` and `b` (stopped by its PID with kill()); resolves once both links exist. */
export async function socatPair(a: string, b: string): Promise<ChildProcess> {
  const socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  await waitFor('socat links', () => existsSync(a) && existsSync(b), 5000);
  return socat;
}

export class Rig {
  readonly dir = mkdtempSync(join(tmpdir(), 'sg-modbus-'));
  readonly master = join(this.dir, 'ttyA');
  readonly slavePath = join(this.dir, 'ttyB');
  tcpPort = 0;
  private socat: ChildProcess | null = null;
  private slave: ChildProcess | null = null;

  /** `extra`: more slave.py arguments (--count FILE, --write-delay S). */
  constructor(private readonly units: string, private readonly rtu = true, private readonly extra: readonly string[] = []) {}

  async start(): Promise<void> {
    this.tcpPort = await freePort();
    if (this.rtu) await this.startSocat();
    await this.startSlave();
  }

  private async startSocat(): Promise<void> {
    this.socat = await socatPair(this.master, this.slavePath);
  }

  private async startSlave(): Promise<void> {
    const args = [SLAVE, '--units', this.units, '--tcp', String(this.tcpPort)];
    if (this.rtu) args.push('--rtu', this.slavePath);
    args.push(...this.extra);
    const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.slave = child;
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await waitFor('pymodbus slave READY', () => out.includes('READY') || child.exitCode !== null, 10_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}; slave stderr: ${err.slice(-500)}`);
    }
    if (child.exitCode !== null) throw new Error(`pymodbus slave exited: ${err.slice(-500)}`);
  }

  /** The pty vanishes (USB adapter unplugged): socat and the slave behind it die. */
  async unplug(): Promise<void> {
    await kill(this.slave);
    await kill(this.socat);
    this.slave = this.socat = null;
  }

  /** The adapter comes back under the same name. */
  async replug(): Promise<void> {
    if (this.rtu) await this.startSocat();
    await this.startSlave();
  }

  /** Unit 2 stops answering / answers again. */
  toggleUnit2(): void {
    if (this.slave?.pid) process.kill(this.slave.pid, 'SIGUSR1');
  }

  async stop(): Promise<void> {
    await kill(this.slave);
    await kill(this.socat);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** mbpoll over TCP against the slave's shared datastore: an independent check of what landed. */
export function mbpollHolding(port: number, unit: number, address: number, count: number): number[] {
  const r = spawnSync('mbpoll', ['-m', 'tcp', '-a', String(unit), '-p', String(port), '-t', '4', '-r', String(address + 1), '-c', String(count), '-1', '127.0.0.1'], { encoding: 'utf8', timeout: 5000 });
  const values = [...(r.stdout ?? '').matchAll(/^\[\d+\]:\s+(-?\d+)/gm)].map((m) => Number(m[1]) & 0xffff);
  if (values.length !== count) throw new Error(`mbpoll failed: ${r.stdout} ${r.stderr}`);
  return values;
}

/** Why mbpoll (the independent cross-check) cannot run here, or null when it can. */
export function mbpollUnavailable(): string | null {
  const there = spawnSync('mbpoll', ['-V']).status === 0 || spawnSync('which', ['mbpoll']).status === 0;
  return there ? null : 'mbpoll is not installed (apt-get install mbpoll)';
}

export interface SinkEvent { at: number; device: string; values?: Record<string, RawValue>; error?: Error }

export class FakeSink implements DataSink {
  readonly events: SinkEvent[] = [];
  data(device: string, values: Record<string, RawValue>): void { this.events.push({ at: Date.now(), device, values }); }
  failure(device: string, error: Error): void { this.events.push({ at: Date.now(), device, error }); }
  dataOf(device: string): SinkEvent[] { return this.events.filter((e) => e.device === device && e.values); }
  failuresOf(device: string): SinkEvent[] { return this.events.filter((e) => e.device === device && e.error); }
  /** Latest value of every point of a device, merged over its data events. */
  latest(device: string): Record<string, RawValue> {
    return Object.assign({}, ...this.dataOf(device).map((e) => e.values));
  }
}

export function context(sink: DataSink): DriverContext {
  return { sink, clock: systemClock, log: silentLogger, lastValue: () => null, lastWrite: () => null };
}

type Mb = NonNullable<PointConfig['modbus']>;
export function point(name: string, modbus: Partial<Mb> & Pick<Mb, 'table' | 'address' | 'data_type'>, access: PointConfig['access'] = 'RW', type: PointConfig['type'] = 'float'): PointConfig {
  return { name, type, access, scale: 1, offset: 0, report: 'change', modbus: { word_order: 'big', byte_order: 'big', ...modbus } };
}

export function device(id: string, unit: number, points: PointConfig[], poll = 200, extra: Record<string, unknown> = {}): ResolvedDevice {
  const model: ModelConfig = { name: `${id}-model`, points };
  return { config: { id, model: model.name, bus: 'rs485', poll, unit_id: unit, ...extra }, model, points: new Map(points.map((p) => [p.name, p])), ttl: 30_000 };
}

export function rtuBus(path: string, extra: Record<string, unknown> = {}): BusConfig {
  return { id: 'rs485', driver: 'modbus-rtu', port: path, baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1, timeout: 300, retries: 1, max_registers: 125, max_gap: 'auto', ...extra };
}
