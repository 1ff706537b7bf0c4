/**
 * Polling: each device's groups (one per poll interval) are read when due. A group's requests are
 * queued at poll priority, so writes and on-demand reads overtake them. A cycle's answers are reported
 * to the sink together, as one atomic update; a cycle with failed requests is one sink.failure. A
 * degraded device only gets its probe through; the others keep their rate: their schedule is a fixed grid,
 * and a cycle the bus held back (another unit's timeout) is made up at once. When polls are due faster
 * than the line serves them, the bus takes whole cycles in a fair order, so every group's period
 * stretches by the same factor (protocol/modbus/cycle-order.ts).
 */
import type { Clock } from '../../core/clock.js';
import type { DataSink, RawValue } from '../types.js';
import type { Logger } from '../../util/logger.js';
import { GatewayError, isGatewayError } from '../../core/errors.js';
import { LinkDownError, PRIORITY, type BusOwner } from './bus-owner.js';
import { decodeResponse, planGroup, type CompiledDevice, type PollGroup } from './device-plan.js';
import { READ_FC } from './transport.js';
import type { ModbusTable } from '../../protocol/modbus/address.js';
import { chainHolds, placeSunspecPoints, unplaceSunspec, walkSunspec } from './sunspec.js';

export interface PollerOptions {
  retries: number;
  /** The bus's request timeout: what one probe of a dead unit costs the line. */
  timeoutMs: number;
  sink: DataSink;
  clock: Clock;
  log: Logger;
  /**
   * Each planned read's answer as the device sent it, with its group cycle (one number per cycle of one
   * group) and the monotonic time it came: the raw image the Modbus server answers from.
   */
  onRaw?(unit: number, table: ModbusTable, address: number, data: readonly (number | boolean)[], cycle: number, at: number): void;
}

/**
 * Probes of degraded devices take at most this share of the line together, a probe costing one timeout:
 * a dead unit is probed once per poll interval, but with the default 300 ms timeout not more often than
 * every 1.2 s (two dead units: every 2.4 s each), so it is back within a cycle or two of answering again
 * while the live units keep the line.
 */
export const PROBE_LINE_SHARE = 0.25;

/** A group at most this far behind its schedule makes up the missed cycles at once; further, it starts afresh. */
export const CATCH_UP_MS = 1000;

export class Poller {
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private readonly running = new Set<Promise<void>>();
  private cycles = 0;

  constructor(private devices: readonly CompiledDevice[], private readonly bus: BusOwner, private readonly options: PollerOptions) {}

  /**
   * Live reconfiguration: polls these devices from now on. Devices kept (same object) keep their due
   * times; new ones are due at once; a removed device's cycle in flight finishes and is not rescheduled.
   */
  setDevices(devices: readonly CompiledDevice[]): void {
    const known = new Set(this.devices);
    const now = this.options.clock.mono();
    for (const d of devices) if (!known.has(d)) for (const g of d.groups) g.nextDue = now;
    this.devices = devices;
    this.schedule();
  }

  start(): void {
    this.stopped = false;
    const now = this.options.clock.mono();
    for (const d of this.devices) for (const g of d.groups) g.nextDue = now;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.running]);
  }

  /**
   * The link is (back) up: every group is polled now (after a re-plug the devices answer again at once, not
   * up to a poll interval later) and degraded devices are probed now instead of after their probe period.
   * A SunSpec device's chain is walked again first: what answers now may be another firmware or model set.
   */
  linkUp(): void {
    const now = this.options.clock.mono();
    for (const d of this.devices) {
      if (d.sunspec?.models) {
        unplaceSunspec(d);
        this.options.log.info({ device: d.id }, 'link (re)opened: walking the SunSpec model chain again');
      }
      if (d.health.degraded) d.health.probeAt = now;
      for (const g of d.groups) g.nextDue = Math.min(g.nextDue, now);
    }
    this.schedule();
  }

  /** How long a degraded device waits between probes (see PROBE_LINE_SHARE). */
  probeEveryMs(device: CompiledDevice): number {
    const degraded = Math.max(1, this.devices.filter((d) => d.health.degraded).length);
    const poll = device.groups.length > 0 ? Math.min(...device.groups.map((g) => g.intervalMs)) : [...device.points.values()][0]?.pollMs ?? 1000;
    return Math.max(poll, (degraded * this.options.timeoutMs) / PROBE_LINE_SHARE);
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    const now = this.options.clock.mono();
    let next = Infinity;
    for (const d of this.devices) {
      const sunspec = d.sunspec;
      if (sunspec && sunspec.models === null) {
        // A SunSpec device is polled once its map is found (drivers/modbus/sunspec.ts).
        if (sunspec.running) continue;
        const due = d.health.degraded ? Math.max(sunspec.nextDue, d.health.probeAt) : sunspec.nextDue;
        if (due <= now) {
          const run = this.discover(d).finally(() => {
            this.running.delete(run);
            this.schedule();
          });
          this.running.add(run);
        } else {
          next = Math.min(next, due);
        }
        continue;
      }
      for (const g of d.groups) {
        if (g.running) continue;
        const due = d.health.degraded ? Math.max(g.nextDue, d.health.probeAt) : g.nextDue;
        if (due <= now) {
          const run = this.runGroup(d, g).finally(() => {
            this.running.delete(run);
            this.schedule();
          });
          this.running.add(run);
        } else {
          next = Math.min(next, due);
        }
      }
    }
    if (next !== Infinity) this.timer = setTimeout(() => this.schedule(), Math.max(1, next - now));
  }

  /**
   * One cycle of a group. Rule 9: what its requests read lands as ONE update (one event, one MQTT state,
   * values of the same cycle) at the end; a cycle with a failed request is one failure (after the update,
   * so the device shows MaybeOffline while the values read are still applied: they are fresh).
   */
  private async runGroup(device: CompiledDevice, group: PollGroup): Promise<void> {
    const { clock, sink, log } = this.options;
    group.running = true;
    const due = group.nextDue;
    const start = clock.mono();
    const cycle = ++this.cycles;
    // Every request of the cycle keeps the cycle's place in the bus's fair order (a saturated line stretches
    // every group's period by the same factor, however many requests its cycle takes).
    const tag = this.bus.cycleTag(group, group.intervalMs);
    const values: Record<string, RawValue> = {};
    let read = false;
    let moved = false;
    let failure: Error | undefined;
    try {
      for (const request of group.requests) {
        if (this.stopped || !device.health.mayPoll(clock.mono())) break;
        const probing = device.health.degraded;
        let skipped = false;
        try {
          const data = await this.bus.enqueue(PRIORITY.poll, async (io) => {
            // A probe queued while an on-demand read at the unit failed: that failure was this period's probe.
            if (probing && !device.health.mayPoll(clock.mono())) return (skipped = true);
            const sentAt = clock.mono();
            if (probing) device.health.claim(sentAt, this.probeEveryMs(device));
            try {
              const out = await io.request(device.unit, { fc: READ_FC[request.table], address: request.address, count: request.count }, device.health.suspect ? 0 : this.options.retries);
              device.health.answered();
              return out;
            } catch (err) {
              // Noted inside the job, before the bus owner runs the next one: a read queued behind this probe then
              // sees the unit backed off (noted after, it went on the line with the old health, a timeout more).
              // The next probe counts from this one's start, as a poll's interval does: counted from its timeout,
              // 1 s polls were probed every 1.3 s, and a revival took up to 2.7 cycles.
              if (!(isGatewayError(err) && err.code === 'MODBUS_EXCEPTION') && !(err instanceof LinkDownError)) {
                device.health.failed(clock.mono(), this.probeEveryMs(device), sentAt); // a closed port says nothing about the slave
              }
              throw err;
            }
          }, tag);
          if (skipped) break;
          device.counters.polls++;
          const decoded = decodeResponse(request, data as (number | boolean)[]);
          if (device.sunspec && !chainHolds(request, decoded)) {
            moved = true; // another model where a placed one began: nothing this cycle read is published
            break;
          }
          this.options.onRaw?.(device.unit, request.table, request.address, data as (number | boolean)[], cycle, clock.mono());
          Object.assign(values, decoded);
          read = true;
        } catch (err) {
          if (this.stopped) return;
          const error = err instanceof Error ? err : new Error(String(err));
          device.counters.failures++;
          failure ??= error;
          if (error instanceof GatewayError && error.code === 'MODBUS_EXCEPTION') {
            device.health.answered(); // the slave is alive; the request is what it refuses
            if (this.stepDown(device, group, request.points.length, error)) break; // replanned: the next cycle uses the new requests
          }
          if (probing || device.health.degraded) {
            if (!probing) log.warn({ device: device.id, unit: device.unit, err: error.message }, 'modbus device not answering; degraded (probed once per probe period)');
            break;
          }
        }
      }
    } finally {
      group.running = false;
      const end = clock.mono();
      group.lastCycleMs = end - start;
      // Fixed-rate grid: a cycle that overran or waited for the bus (another unit's timeout) starts the next
      // one at once, and the cycles missed meanwhile follow, so a stall of the line costs no reads; a group
      // more than CATCH_UP_MS behind (a long outage, a line too slow for it) starts a new grid from now.
      // After a failed cycle the next one starts no sooner than an interval after the failed one started: failed
      // cycles run back to back after a stall counted a device offline in milliseconds (3 failures 57 ms after
      // its adapter was unplugged, beside a CPU hog). A cycle that failed on time by a timeout is still made up
      // (a whole interval after its end instead cost a unit hit by one bad frame a third of its rate).
      const next = (failure ? Math.max(due, start) : due) + group.intervalMs;
      group.nextDue = end - next <= CATCH_UP_MS ? next : end;
    }
    if (this.stopped) return;
    if (moved) {
      if (device.groups.includes(group)) { // not yet forgotten by another group's cycle
        log.warn({ device: device.id, unit: device.unit }, 'SunSpec model chain changed under the map; walking it again');
        unplaceSunspec(device);
      }
      return;
    }
    // A SunSpec map let go during this cycle (the link came up again: walk pending) has no constants to add:
    // what the cycle read is dropped with it rather than published without its scale factors.
    if (device.sunspec && !device.groups.includes(group)) return;
    if (read) sink.data(device.id, device.sunspec ? Object.assign(values, device.sunspec.constants) : values);
    if (failure) sink.failure(device.id, failure);
  }

  /** Walks a SunSpec device's model chain at poll priority; a device that does not answer is a failure, retried at its poll rate. */
  private async discover(device: CompiledDevice): Promise<void> {
    const { clock, sink, log } = this.options;
    const state = device.sunspec!;
    state.running = true;
    try {
      const models = await walkSunspec((address, count) => this.bus.enqueue(PRIORITY.poll, (io) =>
        io.request(device.unit, { fc: 3, address, count }, device.health.suspect ? 0 : this.options.retries)) as Promise<number[]>, state.search);
      device.health.answered();
      if (this.stopped) return;
      const missing = placeSunspecPoints(device, models);
      log.info({ device: device.id, models: [...models.keys()], left_out: missing }, 'SunSpec map found');
    } catch (err) {
      if (this.stopped) return;
      const error = err instanceof Error ? err : new Error(String(err));
      if (isGatewayError(error) && (error.code === 'MODBUS_EXCEPTION' || error.code === 'SUNSPEC_NOT_FOUND')) device.health.answered();
      else if (!(error instanceof LinkDownError)) device.health.failed(clock.mono(), this.probeEveryMs(device));
      state.nextDue = clock.mono() + Math.max(1000, Math.min(...device.groups.map((g) => g.intervalMs), [...device.points.values()][0]?.pollMs ?? 5000));
      sink.failure(device.id, error);
    } finally {
      state.running = false;
    }
  }

  /** Exception 2/3 on a merged read: the device lacks registers in between. Replan one level finer. */
  private stepDown(device: CompiledDevice, group: PollGroup, pointsInRequest: number, error: GatewayError): boolean {
    if (pointsInRequest < 2 || group.level >= 2 || !/exception [23] /.test(error.message)) return false;
    group.level = (group.level + 1) as 1 | 2;
    group.requests = planGroup(group.points, device.planOptions, group.level);
    this.options.log.warn({ device: device.id, mergeLevel: group.level, requests: group.requests.length, err: error.message },
      group.level === 1 ? 'device refused a bridged read; reading contiguous runs only' : 'device refused a multi-point read; reading point by point');
    return true;
  }
}
