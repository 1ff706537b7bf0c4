/**
 * What the gateway tells the world, heard as a client would (mqtt.js on the embedded broker): every
 * data event (each poll cycle, since the truth points report "always"), every offline event with its
 * reason, every availability flip; stamped on this process's clock.
 */
import mqtt, { type MqttClient } from 'mqtt';
import type { Report } from './truth.js';

export interface Flip {
  device: string;
  online: boolean;
  at: number;
}

export class Observer {
  readonly reports: Report[] = [];
  /** Told of every report as it comes (debugging: the wire's trace at a corrupted one). */
  onReport: (report: Report) => void = () => {};
  readonly offline: { device: string; reason: string; at: number }[] = [];
  readonly flips: Flip[] = [];
  private client: MqttClient | null = null;

  constructor(private readonly units: ReadonlyMap<string, number>) {}

  async connect(port: number): Promise<void> {
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { connectTimeout: 5000, reconnectPeriod: 0 });
    this.client = client;
    client.on('message', (topic, payload) => this.message(topic, payload.toString()));
    await client.subscribeAsync(['shadowgate/event/data', 'shadowgate/event/offline', 'shadowgate/+/availability']);
  }

  async close(): Promise<void> {
    await this.client?.endAsync(true).catch(() => {});
  }

  private message(topic: string, text: string): void {
    const at = performance.now();
    if (topic === 'shadowgate/event/data') {
      const e = JSON.parse(text) as { id: string; values: { name: string; value: unknown }[] };
      const unit = this.units.get(e.id);
      if (unit !== undefined) {
        const report = { device: e.id, unit, at, values: Object.fromEntries(e.values.map((v) => [v.name, v.value])) };
        this.reports.push(report);
        this.onReport(report);
      }
    } else if (topic === 'shadowgate/event/offline') {
      const e = JSON.parse(text) as { id: string; reason: string };
      this.offline.push({ device: e.id, reason: e.reason, at });
    } else {
      const device = topic.split('/')[1]!;
      if (text === 'online' || text === 'offline') this.flips.push({ device, online: text === 'online', at });
    }
  }

  /**
   * Poll cycles of `device` reported per second, over whole poll intervals whose edges fall midway between
   * the cycles of its (fixed-rate) schedule: on a perfect line each interval holds exactly one cycle, and a
   * cycle reported late (it waited for the bus) stays in its own interval, so a few seconds read true.
   * The schedule's phase comes from the device's last reports before `from`.
   */
  rate(device: string, pollMs: number, from: number, to: number): number {
    const before = this.reports.filter((r) => r.device === device && r.at < from).slice(-8);
    // Circular mean of the report times modulo the poll interval: the schedule's phase.
    const angle = (t: number): number => ((t % pollMs) / pollMs) * 2 * Math.PI;
    const phase = before.length === 0 ? 0
      : ((Math.atan2(before.reduce((a, r) => a + Math.sin(angle(r.at)), 0), before.reduce((a, r) => a + Math.cos(angle(r.at)), 0)) / (2 * Math.PI)) * pollMs + pollMs) % pollMs;
    const edge = (phase + pollMs / 2) % pollMs;
    const start = from + ((edge - (from % pollMs) + pollMs) % pollMs);
    const span = Math.floor((to - start) / pollMs) * pollMs;
    if (span <= 0) return 0;
    return (this.reports.filter((r) => r.device === device && r.at >= start && r.at < start + span).length * 1000) / span;
  }

  /** The first report of `device` at or after `t`, or null. */
  firstReport(device: string, t: number): Report | null {
    return this.reports.find((r) => r.device === device && r.at >= t) ?? null;
  }

  lastFlip(device: string): Flip | null {
    return this.flips.filter((f) => f.device === device).at(-1) ?? null;
  }
}
