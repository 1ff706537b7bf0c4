/**
 * The device-image rig: a socat pty pair with scripts/modbus-rig/devices.py on one end, serving per unit
 * id the register image of one real device (scripts/modbus-rig/device_images.py, written from the
 * manufacturers' documents), and optionally a real gateway on the other end. Everything lives in a unique
 * temp dir, ports are picked free, every process is killed by PID, every wait has a timeout.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, kill, waitFor } from '../drivers/modbus-rig.js';

const PYTHON = '/usr/bin/python3';
const DEVICES = 'scripts/modbus-rig/devices.py';

export interface ExpectedPoint {
  name: string;
  /** Engineering value from the source (a text, or the accepted texts, for coded values), or null for a not-available marker. */
  value: number | string | string[] | null;
  /** The unit the source gives (or the accepted spellings), null for a unitless value. */
  unit: string | string[] | null;
  reason?: string;
  tolerance?: number;
}

/** One image as `devices.py --describe` prints it. */
export interface DeviceImage {
  key: string;
  unit: number;
  model: string;
  source: string;
  notes: string[];
  limits: { max_registers: number; max_bits: number; max_write_registers: number; source: string };
  refused_functions: Record<string, string>;
  even_only: boolean;
  /** Requests this device refuses although a correct master sends them (SunSpec discovery): [fc, address, count]. */
  expected_refusals: [number, number, number][];
  points: ExpectedPoint[];
}

/** What the slave logged about one request (REQ: answered; REFUSED: an exception). */
export interface SlaveEvent {
  kind: 'REQ' | 'REFUSED';
  unit: number;
  device: string;
  fc: number;
  address: number;
  count: number;
  code?: number;
  why?: string;
}

/** `[["sdm630", 1], …]` → `sdm630:1,…` */
export const deviceSpec = (devices: readonly (readonly [string, number])[]): string => devices.map(([k, u]) => `${k}:${u}`).join(',');

/** The images (with their expected points) of a device spec; "" = every image, units 1..N. */
export function describeImages(spec = ''): DeviceImage[] {
  const r = spawnSync(PYTHON, [DEVICES, '--describe', spec], { encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) throw new Error(`devices.py --describe failed: ${r.stderr || r.error?.message}`);
  return JSON.parse(r.stdout) as DeviceImage[];
}

export class DeviceRig {
  readonly dir = mkdtempSync(join(tmpdir(), 'sg-devices-'));
  readonly master = join(this.dir, 'ttyA');
  readonly slavePath = join(this.dir, 'ttyB');
  tcpPort = 0;
  readonly events: SlaveEvent[] = [];
  private socat: ChildProcess | null = null;
  private slave: ChildProcess | null = null;
  private stderr = '';

  constructor(public spec: string) {}

  async start(): Promise<void> {
    this.tcpPort = await freePort();
    this.socat = spawn('socat', [`pty,raw,echo=0,link=${this.master}`, `pty,raw,echo=0,link=${this.slavePath}`], { stdio: 'ignore' });
    await waitFor('socat links', () => existsSync(this.master) && existsSync(this.slavePath), 5000);
    const child = spawn(PYTHON, [DEVICES, '--rtu', this.slavePath, '--tcp', String(this.tcpPort), '--device', this.spec, '--log'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.slave = child;
    let out = '';
    let partial = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => {
      const text = partial + d.toString();
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = /^(REQ|REFUSED) (\{.*\})$/.exec(line);
        if (m) this.events.push({ kind: m[1] as SlaveEvent['kind'], ...(JSON.parse(m[2]!) as Omit<SlaveEvent, 'kind'>) });
        else if (line.trim() && !line.startsWith('COUNTS ')) this.stderr = (this.stderr + line + '\n').slice(-4000);
      }
    });
    try {
      await waitFor('devices.py READY', () => out.includes('READY') || child.exitCode !== null, 15_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}; devices.py stderr: ${this.stderr.slice(-800)}`);
    }
    if (child.exitCode !== null) throw new Error(`devices.py exited: ${this.stderr.slice(-800)}`);
  }

  /**
   * The adapter is unplugged and, under the same pty names, devices with other register images answer when
   * it is back (a firmware update, an inverter switched to other SunSpec models). The request log goes on.
   */
  async swap(spec: string): Promise<void> {
    await kill(this.slave);
    await kill(this.socat);
    this.slave = this.socat = null;
    this.spec = spec;
    await this.start();
  }

  /** Refusals so far (optionally of one unit). */
  refusals(unit?: number): SlaveEvent[] {
    return this.events.filter((e) => e.kind === 'REFUSED' && (unit === undefined || e.unit === unit));
  }

  /** Anything devices.py printed on stderr that is not a request line (tracebacks). */
  get errors(): string { return this.stderr; }

  async stop(): Promise<void> {
    await kill(this.slave);
    await kill(this.socat);
    this.slave = this.socat = null;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The config around the devices: silent log, HTTP on port 0, MQTT and history off, one RTU bus on the rig. */
export function deviceRigConfig(dir: string, rig: DeviceRig, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    gateway: { id: 'device-rig', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600 }],
    ...extra,
  };
}

/** A running rig + gateway for a whole suite (started in `before`, stopped in `after`). */
export interface DeviceGateway { rig: DeviceRig; gw: Gateway; dir: string; stop(): Promise<void> }

export async function startDeviceGateway(
  spec: string,
  config: (rig: DeviceRig, dir: string) => Record<string, unknown>,
): Promise<DeviceGateway> {
  const rig = new DeviceRig(spec);
  const dir = await mkdtemp(join(tmpdir(), 'sg-devices-gw-'));
  let gw: Gateway | undefined;
  const stop = async (): Promise<void> => {
    await gw?.stop();
    await rig.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await rig.start();
    const raw = config(rig, dir);
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    return { rig, gw, dir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
