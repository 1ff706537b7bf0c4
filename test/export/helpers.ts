/** Shared fixtures for the export tests: a real Shadow, a recording DeviceIO, temp dirs, real MQTT clients. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { systemClock } from '../../src/core/clock.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient, type IClientOptions } from 'mqtt';
import { EventBus, type ShadowEvents } from '../../src/core/events.js';
import { GatewayError, unknownDevice } from '../../src/core/errors.js';
import type { DeviceIO, WriteRequest } from '../../src/core/io.js';
import { Shadow } from '../../src/core/shadow.js';
import type { ExportContext, MqttConfig, PointInfo, ShadowExportConfig } from '../../src/export/context.js';
import { silentLogger } from '../../src/util/logger.js';

export const hasMosquittoClients = spawnSync('sh', ['-c', 'command -v mosquitto_sub && command -v mosquitto_pub']).status === 0;

export function tempDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `sg-export-${tag}-`));
}
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** A DeviceIO that validates against `points` and records every accepted batch. */
export class FakeIO implements DeviceIO {
  readonly writes: { id: string; values: WriteRequest[] }[] = [];
  delayMs = 0;
  constructor(private readonly shadow: Shadow, private readonly points: (id: string) => PointInfo[]) {}
  async readPoint(): Promise<null> {
    return null;
  }
  async writePoints(id: string, values: readonly WriteRequest[]): Promise<void> {
    if (!this.shadow.HasDevice(id)) throw unknownDevice();
    const pts = this.points(id);
    for (const v of values) {
      const p = pts.find((x) => x.name === v.name);
      if (!p) throw new GatewayError('UNKNOWN_POINT', `unknown point: ${v.name}`);
      if (p.access === 'R') throw new GatewayError('POINT_READONLY', 'point is readonly, can not write');
      if (p.type !== 'string' && typeof v.value !== 'number') {
        throw new GatewayError('INVALID_VALUE', `value ${JSON.stringify(v.value)} is not a number for point ${v.name}`);
      }
    }
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    this.writes.push({ id, values: [...values] });
  }
}

export const MODEL_POINTS: PointInfo[] = [
  { name: 'temp', type: 'float', access: 'R', unit: '°C' },
  { name: 'energy', type: 'float', access: 'R', unit: 'kWh' },
  { name: 'relay1', type: 'int', access: 'RW' },
  { name: 'door', type: 'int', access: 'R' },
  { name: 'setpoint', type: 'float', access: 'RW', unit: '°C' },
  { name: 'label', type: 'string', access: 'RW' },
];

export interface Fixture {
  ctx: ExportContext;
  shadow: Shadow;
  bus: EventBus<ShadowEvents>;
  io: FakeIO;
  dir: string;
}

export function defaultMqtt(over: Partial<MqttConfig> = {}): MqttConfig {
  return {
    enable: true, host: '127.0.0.1', port: 0, ws_port: 0, base_topic: 'sg',
    users: [], allow_anonymous: true, homeassistant: { enable: false, prefix: 'homeassistant' }, ...over,
  };
}

export const noExport: ShadowExportConfig = { enable: false, format: 'json', interval: 1000, targets: [] };

/** A real Shadow with devices `dev1` (online, values set) and `dev2` (never seen), and a context around it. */
export function makeFixture(opts: { dir?: string; mqtt?: Partial<MqttConfig>; shadowExport?: ShadowExportConfig } = {}): Fixture {
  const bus = new EventBus<ShadowEvents>((err) => console.error('listener error', err));
  const shadow = new Shadow({ maxDevices: 16, maxPoints: 256, defaultTtl: 60_000, bus });
  const points = (id: string): PointInfo[] => (shadow.HasDevice(id) ? MODEL_POINTS : []);
  const io = new FakeIO(shadow, points);
  const dir = opts.dir ?? tempDir('fx');
  for (const id of ['dev1', 'dev2']) shadow.AddDevice(id, 'demo-model', 60_000, { points: MODEL_POINTS.map((p) => ({ name: p.name })) });
  shadow.SetDevicePoints('dev1', { temp: 21.5, energy: 10, relay1: 0, door: 1, setpoint: 20, label: 'hello' });
  const ctx: ExportContext = {
    shadow, bus, io,
    shadowJson: () => shadow.GetDevices().map((d) => ({ id: d.id, online: d.online })),
    devicePoints: points,
    mqtt: defaultMqtt(opts.mqtt),
    export: { shadow: opts.shadowExport ?? noExport },
    gatewayId: 'gw1',
    dataDir: dir,
    clock: systemClock,
    log: silentLogger,
  };
  return { ctx, shadow, bus, io, dir };
}

/** Resolves when `pred` holds, polling; rejects after `ms`. */
export async function waitFor(pred: () => boolean, ms = 3000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))),
  ]);
}

/** Runs a mosquitto client to completion (killed after `ms`); returns exit status and output. */
export function runMosquitto(cmd: 'mosquitto_sub' | 'mosquitto_pub', args: string[], ms = 5000):
  Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Connects an mqtt.js client (MQTT 3.1.1, no reconnect); rejects on CONNACK refusal or after 3 s. */
export function connectClient(url: string, opts: IClientOptions = {}): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 3000, ...opts });
    const t = setTimeout(() => {
      c.end(true);
      reject(new Error('connect timeout'));
    }, 3000);
    c.once('connect', () => {
      clearTimeout(t);
      resolve(c);
    });
    c.once('error', (err) => {
      clearTimeout(t);
      c.end(true);
      reject(err);
    });
  });
}

/** Collects messages on `filter` (including retained ones delivered on subscribe). */
export async function collect(c: MqttClient, filter: string): Promise<{ topic: string; payload: string; retain: boolean }[]> {
  const got: { topic: string; payload: string; retain: boolean }[] = [];
  c.on('message', (topic, payload, packet) => got.push({ topic, payload: payload.toString(), retain: packet.retain }));
  await withTimeout(c.subscribeAsync(filter, { qos: 1 }), 3000, `subscribe ${filter}`);
  return got;
}

export const endClient = (c: MqttClient | undefined): Promise<void> =>
  c ? new Promise((r) => c.end(true, {}, () => r())) : Promise.resolve();
