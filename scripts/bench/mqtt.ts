/**
 * MQTT export figures: change → subscriber latency p50/p99 at 1k and 10k changes/s, and messages/s
 * delivered to one subscriber in a burst. The subscriber is a real client in its own process
 * (mosquitto_sub, line-buffered into a file that is parsed after each phase, so reading it costs the
 * measured process nothing). Reference in the same run: the same exporter (same topics, same JSON) feeding
 * a Mosquitto broker through an mqtt.js client, measured by the same subscriber.
 * Each change produces a data event; the retained device state is published once per device per task
 * (so a burst yields fewer states than changes). Latency is taken on the event; events must all arrive.
 * Loopback only, bounded in count and time; every child is killed by PID.
 * Run alone: `node --import tsx scripts/bench/mqtt.ts`; `make bench` calls benchMqtt().
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import mqtt from 'mqtt';
import { EventBus, type ShadowEvents } from '../../src/core/events.js';
import { Shadow } from '../../src/core/shadow.js';
import type { ExportContext, PointInfo } from '../../src/export/context.js';
import { startExport } from '../../src/runtime/export.js';
import { MqttExporter } from '../../src/export/mqtt-exporter.js';
import { Topics } from '../../src/export/topics.js';
import { silentLogger } from '../../src/util/logger.js';
import { Mosquitto, freePort, hasMosquitto } from '../../test/export/mosquitto.js';
import type { Result } from './report.js';

const RATES = [1000, 10_000] as const;
const PACED_SECONDS = 3;
const BURST_CHANGES = 50_000;
const PHASE_TIMEOUT_MS = 20_000;
const QUIET_MS = 500;

const POINTS: PointInfo[] = [
  { name: 'temp', type: 'float', access: 'R', unit: '°C' },
  { name: 'energy', type: 'float', access: 'R', unit: 'kWh' },
  { name: 'power', type: 'float', access: 'R', unit: 'W' },
  { name: 'relay1', type: 'int', access: 'RW' },
  { name: 'setpoint', type: 'float', access: 'RW', unit: '°C' },
];

interface Phase {
  changes: number;
  /** data events received (one per change is expected: fewer is loss) */
  events: number;
  /** retained-state messages received (the exporter builds one per device per task, so ≤ changes) */
  states: number;
  p50: number;
  p99: number;
  /** all messages per second, from the first change to the last message received */
  rate: number;
  /** data events per second, same window */
  eventRate: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wall-clock ms with sub-ms resolution, anchored on a Date.now() tick (mosquitto_sub stamps with the wall clock). */
function wallClock(): () => number {
  const start = Date.now();
  while (Date.now() === start) { /* spin to the ms boundary */ }
  const wall = Date.now();
  const mono = performance.now();
  return () => wall + (performance.now() - mono);
}

function fixture(dataDir: string) {
  const bus = new EventBus<ShadowEvents>((err) => console.error('listener error', err));
  const shadow = new Shadow({ maxDevices: 16, maxPoints: 256, defaultTtl: 3_600_000, bus });
  shadow.AddDevice('dev1', 'meter', 3_600_000, { points: POINTS.map((p) => ({ name: p.name })) });
  shadow.SetDevicePoints('dev1', { temp: 21.5, energy: 10, power: 230, relay1: 0, setpoint: 20 });
  const ctx: ExportContext = {
    shadow, bus,
    io: { readPoint: async () => null, writePoints: async () => {} },
    shadowJson: () => [],
    devicePoints: () => POINTS,
    mqtt: {
      enable: true, host: '127.0.0.1', port: 0, ws_port: 0, base_topic: 'sg', users: [], allow_anonymous: true,
      homeassistant: { enable: false, prefix: 'homeassistant' },
    },
    export: { shadow: { enable: false, format: 'json', interval: 1000, targets: [] } },
    gatewayId: 'bench', dataDir, clock: { now: () => Date.now(), mono: () => performance.now() }, log: silentLogger,
  };
  return { shadow, ctx };
}

/** mosquitto_sub on `sg/#`, one line per message (`<rx epoch s.ns> <topic> <payload>`) into a file. */
class Subscriber {
  private readonly child: ChildProcess;
  private readonly fd: number;
  private offset = 0;
  constructor(port: number, readonly file: string) {
    this.fd = openSync(file, 'w');
    this.child = spawn('stdbuf', ['-oL', 'mosquitto_sub', '-h', '127.0.0.1', '-p', String(port), '-t', 'sg/#', '-F', '%U %t %p'],
      { stdio: ['ignore', this.fd, 'inherit'] });
  }
  size(): number {
    return statSync(this.file).size;
  }
  /** Waits until the file stops growing for QUIET_MS (or `deadline`); returns the lines written since the last call. */
  async drain(deadline: number): Promise<string[]> {
    let size = this.size();
    let since = Date.now();
    while (Date.now() < deadline) {
      await sleep(50);
      const s = this.size();
      if (s !== size) {
        size = s;
        since = Date.now();
      } else if (Date.now() - since >= QUIET_MS) break;
    }
    const text = readFileSync(this.file).subarray(this.offset, size).toString();
    const cut = text.lastIndexOf('\n') + 1;
    this.offset += Buffer.byteLength(text.slice(0, cut));
    return text.slice(0, cut).split('\n').filter(Boolean);
  }
  stop(): void {
    if (this.child.pid && this.child.exitCode === null) process.kill(this.child.pid, 'SIGTERM');
    closeSync(this.fd);
  }
}

/** The value of the first point of a data event (the change's send stamp) and the receive stamp, ms. */
function stamps(line: string): { rx: number; sent: number } | null {
  const sp = line.indexOf(' ');
  const sp2 = line.indexOf(' ', sp + 1);
  if (line.slice(sp + 1, sp2) !== 'sg/event/data') return null;
  const m = /"value":([\d.e+]+)/.exec(line);
  return m ? { rx: Number(line.slice(0, sp)) * 1000, sent: Number(m[1]) } : null;
}

function quantile(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN;
}

function summarize(lines: string[], changes: number, t0: number): Phase {
  const lat: number[] = [];
  let lastRx = t0;
  let states = 0;
  for (const l of lines) {
    const rx = Number(l.slice(0, l.indexOf(' '))) * 1000;
    if (rx > lastRx) lastRx = rx;
    const s = stamps(l);
    if (s) lat.push(s.rx - s.sent);
    else if (l.includes(' sg/dev1 ')) states++;
  }
  lat.sort((a, b) => a - b);
  const secs = (lastRx - t0) / 1000;
  return {
    changes, events: lat.length, states, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99),
    rate: lines.length / secs, eventRate: lat.length / secs,
  };
}

/** Drives `changes` through the shadow at `rate`/s (Infinity: as fast as the process goes, yielding every 500). */
async function drive(shadow: Shadow, now: () => number, changes: number, rate: number): Promise<number> {
  const t0 = performance.now();
  let last = 0;
  let i = 0;
  while (i < changes) {
    const due = rate === Infinity ? Math.min(changes, i + 500) : Math.min(changes, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
    while (i < due) {
      // Distinct, increasing stamps: an unchanged value would not be a change.
      const stamp = Math.max(now(), last + 0.001);
      last = stamp;
      shadow.SetDevicePoints('dev1', { temp: stamp });
      i++;
    }
    const ahead = ((i * 1000) / rate) - (performance.now() - t0);
    await new Promise((r) => (ahead > 1.5 ? setTimeout(r, 1) : setImmediate(r)));
  }
  return changes;
}

interface Target {
  name: string;
  port: number;
  stop(): Promise<void>;
}

async function runTarget(label: string, start: (ctx: ExportContext) => Promise<Target>, dir: string): Promise<{ name: string; phases: Phase[] }> {
  const { shadow, ctx } = fixture(path.join(dir, label));
  const target = await start(ctx);
  const sub = new Subscriber(target.port, path.join(dir, `${label}.lines`));
  const phases: Phase[] = [];
  try {
    // Subscribed once the retained state has arrived.
    const end = Date.now() + 5000;
    while (sub.size() === 0) {
      if (Date.now() > end) throw new Error(`${label}: subscriber got nothing in 5 s`);
      await sleep(20);
    }
    await sub.drain(Date.now() + 2000);
    const now = wallClock();
    for (const rate of RATES) {
      const t0 = now();
      const n = await drive(shadow, now, rate * PACED_SECONDS, rate);
      phases.push(summarize(await sub.drain(Date.now() + PHASE_TIMEOUT_MS), n, t0));
    }
    const t0 = now();
    const n = await drive(shadow, now, BURST_CHANGES, Infinity);
    phases.push(summarize(await sub.drain(Date.now() + PHASE_TIMEOUT_MS), n, t0));
  } finally {
    sub.stop();
    await target.stop();
  }
  return { name: target.name, phases };
}

const ours = async (ctx: ExportContext): Promise<Target> => {
  const gw = await startExport(ctx);
  return { name: 'shadowgate (Aedes)', port: gw.mqttPort, stop: () => gw.stop() };
};

/** The same exporter publishing through mqtt.js (QoS 0, same retain flags) to a Mosquitto child. */
const viaMosquitto = (dir: string) => async (ctx: ExportContext): Promise<Target> => {
  const broker = new Mosquitto(await freePort(), dir);
  await broker.start();
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { protocolVersion: 4, reconnectPeriod: 0 });
  const exporter = new MqttExporter(ctx, new Topics(ctx.mqtt.base_topic), (topic, payload, retain) => {
    client.publish(topic, payload, { qos: 0, retain });
  });
  exporter.start();
  exporter.publishAll([], () => exporter.republishDiscovery());
  return {
    name: 'Mosquitto 2 (reference)', port: broker.port,
    async stop() {
      exporter.stop();
      await client.endAsync(true);
      await broker.stop();
    },
  };
};

export async function benchMqtt(): Promise<Result[]> {
  const missing = ['mosquitto_sub', 'stdbuf'].filter((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0);
  if (missing.length || !hasMosquitto) {
    console.log(`SKIP: mqtt bench needs mosquitto_sub, stdbuf and /usr/sbin/mosquitto (missing: ${[...missing, ...(hasMosquitto ? [] : ['mosquitto'])].join(', ')})`);
    return [];
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sg-bench-mqtt-'));
  try {
    const conditions = `loopback, ${os.cpus().length} CPUs, loadavg ${os.loadavg()[0]!.toFixed(2)} at start, node ${process.version}`;
    const runs = [await runTarget('ours', ours, dir), await runTarget('mosquitto', viaMosquitto(dir), dir)];
    const results: Result[] = [];
    for (const run of runs) {
      const ref = run.name.includes('reference');
      RATES.forEach((rate, i) => {
        const p = run.phases[i]!;
        const note = `events ${p.events}/${p.changes}, states ${p.states}${i === 0 && !ref ? `; ${conditions}` : ''}`;
        results.push(
          { name: `${run.name}: change→subscriber p50 at ${rate / 1000}k changes/s`, measured: p.p50, target: 5, unit: 'ms', higherIsBetter: false, note: `no p50 target; ${note}` },
          { name: `${run.name}: change→subscriber p99 at ${rate / 1000}k changes/s`, measured: p.p99, target: 5, unit: 'ms', higherIsBetter: false, note },
        );
      });
      const b = run.phases[RATES.length]!;
      results.push({
        name: `${run.name}: messages delivered to one subscriber (burst of ${BURST_CHANGES / 1000}k changes)`, measured: b.rate, target: 50_000,
        unit: 'msg/s', higherIsBetter: true,
        note: `events ${b.events}/${b.changes} at ${Math.round(b.eventRate)}/s, states ${b.states}; burst p99 ${b.p99.toFixed(1)} ms`,
      });
    }
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { report } = await import('./report.js');
  report(await benchMqtt());
}
