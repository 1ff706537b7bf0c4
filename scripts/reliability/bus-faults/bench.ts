/**
 * The line under test: the real gateway (dist/main.js) on pty A, the fault wire between pty A and the
 * slaves' ptys, two truth slaves (units 1 and 2 in one process, unit 3 — the one that dies — in another),
 * and an MQTT observer. Everything is started here and stopped by PID in stop(), whatever happened.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HopLog } from './hop-log.js';
import { Observer } from './observer.js';
import { freePort } from '../../../test/drivers/modbus-rig.js';
import { startChild, type Running } from '../../bench/child.js';
import { kill, ptyPair, sleep, truthSlave, waitFor } from './procs.js';
import { TRUTH_MODEL, TruthLog } from './truth.js';
import { Wire } from './wire.js';

export const BAUD = 9600;
export const TIMEOUT_MS = 300;
/** Devices: two healthy units polled fast, one (on its own slave) polled at the default rate. */
export const DEVICES = [
  { id: 'u1', unit: 1, pollMs: 250 },
  { id: 'u2', unit: 2, pollMs: 250 },
  { id: 'u3', unit: 3, pollMs: 1000 },
] as const;
export const HEALTHY = ['u1', 'u2'] as const;

export class Bench {
  readonly truth = new TruthLog();
  readonly observer = new Observer(new Map(DEVICES.map((d) => [d.id, d.unit])));
  wire!: Wire;
  gateway!: Running;
  private dir = '';
  private mqttPort = 0;
  private socatA: ChildProcess | null = null;
  private readonly socats: ChildProcess[] = [];
  private slave12: ChildProcess | null = null;
  slave3: ChildProcess | null = null;
  private slave3Starts = 0;
  /** The socat hop to the gateway's pty, in its own words: when it moved each byte (the collision judge's evidence). */
  private readonly hop = new HopLog();
  private readonly hopLog = (text: string, at: number): void => this.hop.feed(text, at);

  private p(name: string): string {
    return path.join(this.dir, name);
  }

  async start(): Promise<void> {
    this.dir = await mkdtemp(path.join(os.tmpdir(), 'sg-bus-faults-'));
    this.mqttPort = await freePort();
    this.socatA = await ptyPair(this.p('gw'), this.p('relay-gw'), this.hopLog);
    this.socats.push(await ptyPair(this.p('relay-s12'), this.p('s12')), await ptyPair(this.p('relay-s3'), this.p('s3')));
    // In parallel (python starts slowly); each is kept as soon as it runs, so stop() finds it whatever failed.
    const started = await Promise.allSettled([
      truthSlave(this.p('s12'), '1,2', 0, this.truth).then((c) => (this.slave12 = c)),
      this.startSlave3(),
    ]);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    this.wire = new Wire(this.p('relay-gw'), [this.p('relay-s12'), this.p('relay-s3')], BAUD);
    this.wire.hop = this.hop;
    await this.wire.start();
    const config = {
      gateway: { id: 'bus-faults', data_dir: this.p('data'), log_level: 'info' },
      http: { host: '127.0.0.1', port: 0 },
      mqtt: { enable: true, host: '127.0.0.1', port: this.mqttPort, ws_port: 0 },
      history: { enable: false },
      shadow: { persist_interval: '1h' },
      buses: [{ id: 'rs485', driver: 'modbus-rtu', port: this.p('gw'), baud_rate: BAUD, timeout: `${TIMEOUT_MS}ms`, retries: 1 }],
      models: { truth: TRUTH_MODEL },
      devices: DEVICES.map((d) => ({ id: d.id, model: 'truth', bus: 'rs485', unit_id: d.unit, poll: `${d.pollMs}ms` })),
    };
    await writeFile(this.p('config.json'), JSON.stringify(config));
    this.gateway = await startChild(this.p('config.json'));
    this.wire.gatewayPid = this.gateway.child.pid ?? 0;
    this.wire.hopPid = this.socatA?.pid ?? 0;
    await this.observer.connect(this.mqttPort);
    await this.settle(15_000);
  }

  /** Unit 3's slave process (again): its sequence goes on from a higher base so answers stay ordered. */
  /** The slaves' pids now (unit 3's changes each time it is started again). */
  slavePids(): number[] {
    return [this.slave12?.pid ?? 0, this.slave3?.pid ?? 0];
  }

  async startSlave3(): Promise<number> {
    this.slave3 = await truthSlave(this.p('s3'), '3', 1_000_000 * this.slave3Starts++, this.truth);
    return performance.now();
  }

  async killSlave3(): Promise<number> {
    this.slave3?.kill('SIGKILL'); // dies, no goodbye
    await kill(this.slave3);
    this.slave3 = null;
    return performance.now();
  }

  /** The gateway's pty vanishes (adapter unplugged): its socat pair dies, links and all. */
  async unplug(): Promise<number> {
    await kill(this.socatA);
    this.socatA = null;
    return performance.now();
  }

  /** The adapter is back under the same name; returns when the line is whole again. */
  async replug(): Promise<number> {
    this.socatA = await ptyPair(this.p('gw'), this.p('relay-gw'), this.hopLog);
    this.wire.hopPid = this.socatA.pid ?? 0;
    await this.wire.attachGateway();
    return performance.now();
  }

  /** Until every device has reported within the last two of its cycles (or throws). */
  async settle(timeoutMs: number): Promise<void> {
    await waitFor('every device polled again', () => DEVICES.every((d) => {
      const r = this.observer.reports.findLast((x) => x.device === d.id);
      return r !== undefined && performance.now() - r.at < 2 * d.pollMs + 200;
    }), timeoutMs);
  }

  /** The bus figures of /metrics (requests, timeouts, crc errors, reopens). */
  async metrics(): Promise<Record<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${this.gateway.port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^shadowgate_bus_(requests|timeouts|crc_errors|errors|reopens)_total\{bus="rs485"\} (\S+)$/gm)) out[m[1]!] = Number(m[2]);
    return out;
  }

  async stop(): Promise<void> {
    await this.observer.close();
    if (this.gateway) await this.gateway.stop();
    await this.wire?.stop().catch(() => {});
    await Promise.all([kill(this.slave12), kill(this.slave3)]);
    await Promise.all([this.socatA, ...this.socats].map((s) => kill(s)));
    await sleep(0);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
