/**
 * The pymodbus rig at a real line rate: ptys deliver bytes at once whatever the baud rate, so for tests
 * where the line's speed matters the baud-emulating relay sits between the gateway's pty and the slave's:
 *   master <-> [master|a] <-relay at `baud`-> [b|slave] <-> pymodbus slave
 * Every process started here is stopped by its PID in stop(); links live in a unique temp dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBaudRelay, type BaudRelay } from '../../scripts/modbus-rig/baud-relay.js';
import { kill, waitFor } from './modbus-rig.js';

export class RelayRig {
  readonly dir = mkdtempSync(join(tmpdir(), 'sg-modbus-relay-'));
  readonly master = join(this.dir, 'ttyA');
  private readonly procs: ChildProcess[] = [];
  private relay: BaudRelay | null = null;

  constructor(private readonly units: string, readonly baud = 9600) {}

  async start(): Promise<void> {
    const link = (n: string): string => join(this.dir, n);
    for (const [x, y] of [['ttyA', 'ttyAr'], ['ttyBr', 'ttyB']] as const) {
      this.procs.push(spawn('socat', [`pty,raw,echo=0,link=${link(x)}`, `pty,raw,echo=0,link=${link(y)}`], { stdio: 'ignore' }));
    }
    await waitFor('socat links', () => ['ttyA', 'ttyAr', 'ttyBr', 'ttyB'].every((n) => existsSync(link(n))), 5000);
    const slave = spawn('/usr/bin/python3', ['scripts/modbus-rig/slave.py', '--rtu', link('ttyB'), '--units', this.units, '--baud', String(this.baud)],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    this.procs.push(slave);
    let out = '';
    let err = '';
    slave.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    slave.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-500)));
    await waitFor('pymodbus slave READY', () => out.includes('READY') || slave.exitCode !== null, 10_000);
    if (slave.exitCode !== null) throw new Error(`pymodbus slave exited: ${err}`);
    this.relay = await startBaudRelay(link('ttyAr'), link('ttyBr'), this.baud);
  }

  async stop(): Promise<void> {
    await this.relay?.stop();
    for (const p of this.procs.reverse()) await kill(p);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
