/**
 * The bus rig of the real-bus CPU bench: master pty ↔ baud relay (9600 baud wire time, half duplex) ↔
 * slave pty ↔ devices.py serving library device images, one unit id each. The slave runs with --log, so
 * every request it answers is one `REQ {json}` line: an independent count of the requests any master
 * (the gateway or the reference) makes, and the exact list of them, read from the slave, not the master.
 * Every process is started here and killed by PID in stop(); the links live in a unique temp dir.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBaudRelay, type BaudRelay } from '../../modbus-rig/baud-relay.js';

const PYTHON = '/usr/bin/python3';

import { sleep, waitFor } from '../../../test/drivers/modbus-rig.js';

export { sleep, waitFor };

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child has exited. */
export function killChild(child: ChildProcess | null, graceMs = 1500): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => { try { process.kill(child.pid!, 'SIGKILL'); } catch { /* gone */ } }, graceMs);
    child.once('exit', () => { clearTimeout(hard); resolve(); });
    try { process.kill(child.pid!, 'SIGTERM'); } catch { clearTimeout(hard); resolve(); }
  });
}

/** Why the rig cannot run here, or null when it can. */
export function rigUnavailable(): string | null {
  if (spawnSync('socat', ['-V']).status !== 0) return 'socat is not installed';
  if (spawnSync(PYTHON, ['-c', 'import pymodbus']).status !== 0) return 'python3-pymodbus is not installed';
  if (spawnSync('mosquitto_sub', ['--help']).error) return 'mosquitto_sub is not installed';
  return null;
}

/** One request as the slave saw it. */
export interface SlaveRequest {
  at: number;
  unit: number;
  fc: number;
  address: number;
  count: number;
}

export class BusRig {
  readonly dir = mkdtempSync(join(tmpdir(), 'sg-busbench-'));
  /** The port a master opens. */
  readonly master = join(this.dir, 'ttyA');
  readonly requests: SlaveRequest[] = [];
  refusals = 0;
  /** with live values: how many points move, and how often (from live_devices.py) */
  live: { points: number; period: number } | null = null;
  private readonly procs: ChildProcess[] = [];
  private relay: BaudRelay | null = null;

  /**
   * `devices`: devices.py spec, e.g. `sdm120:1,pzem-016:2`. `livePeriodS`: serve live values through
   * live_devices.py (measurement points re-drawn every that many seconds) instead of fixed images.
   */
  constructor(private readonly devices: string, private readonly baud: number, private readonly livePeriodS = 0) {}

  async start(): Promise<void> {
    const link = (n: string): string => join(this.dir, n);
    // master <-> [ttyA|ttyAr] <-relay-> [ttyBr|ttyB] <-> slave
    for (const [x, y] of [['ttyA', 'ttyAr'], ['ttyBr', 'ttyB']] as const) {
      this.procs.push(spawn('socat', [`pty,raw,echo=0,link=${link(x)}`, `pty,raw,echo=0,link=${link(y)}`], { stdio: 'ignore' }));
    }
    await waitFor('socat links', () => ['ttyA', 'ttyAr', 'ttyBr', 'ttyB'].every((n) => existsSync(link(n))), 5000);
    const script = this.livePeriodS > 0 ? ['scripts/bench/modbus-bus/live_devices.py', '--period', String(this.livePeriodS)] : ['scripts/modbus-rig/devices.py'];
    const slave = spawn(PYTHON, [...script, '--rtu', link('ttyB'), '--device', this.devices, '--baud', String(this.baud), '--log'],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    this.procs.push(slave);
    let out = '';
    let errTail = '';
    let partial = '';
    slave.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    slave.stderr!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop()!;
      const now = performance.now();
      for (const line of lines) {
        if (line.startsWith('REQ ')) {
          const r = JSON.parse(line.slice(4)) as Omit<SlaveRequest, 'at'>;
          this.requests.push({ at: now, unit: r.unit, fc: r.fc, address: r.address, count: r.count });
        } else if (line.startsWith('REFUSED ')) this.refusals++;
        else if (line.startsWith('LIVE ')) this.live = JSON.parse(line.slice(5)) as { points: number; period: number };
        else errTail = (errTail + line + '\n').slice(-800);
      }
    });
    try {
      await waitFor('devices.py READY', () => out.includes('READY') || slave.exitCode !== null, 10_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}; slave stderr: ${errTail}`);
    }
    if (slave.exitCode !== null) throw new Error(`devices.py exited: ${errTail}`);
    if (this.livePeriodS > 0) await waitFor('live_devices.py LIVE line', () => this.live !== null, 5000);
    this.relay = await startBaudRelay(link('ttyAr'), link('ttyBr'), this.baud);
  }

  /** Requests the slave answered in [from, to) (performance.now() ms). */
  between(from: number, to: number): SlaveRequest[] {
    return this.requests.filter((r) => r.at >= from && r.at < to);
  }

  async stop(): Promise<void> {
    await this.relay?.stop().catch(() => {});
    this.relay = null;
    for (const p of this.procs.reverse()) await killChild(p);
    this.procs.length = 0;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The distinct requests of a log (unit, function, address, count), each with how often it was seen. */
export function distinctRequests(log: readonly SlaveRequest[]): { unit: number; fc: number; address: number; count: number; seen: number }[] {
  const byKey = new Map<string, { unit: number; fc: number; address: number; count: number; seen: number }>();
  for (const r of log) {
    const key = `${r.unit}/${r.fc}/${r.address}/${r.count}`;
    const e = byKey.get(key) ?? { unit: r.unit, fc: r.fc, address: r.address, count: r.count, seen: 0 };
    e.seen++;
    byKey.set(key, e);
  }
  return [...byKey.values()].sort((a, b) => a.unit - b.unit || a.fc - b.fc || a.address - b.address);
}
