/**
 * The Modbus driver shared by modbus-rtu and modbus-tcp: one BusOwner per link, devices compiled
 * into planned poll groups, on-demand reads and writes through the same queue, and metrics.
 */
import type { BusConfig, ResolvedDevice } from '../../config/types.js';
import { GatewayError, isDeviceFailure, isGatewayError, unknownDevice, unknownPoint } from '../../core/errors.js';
import type { RawPointValue } from '../../protocol/modbus/codec.js';
import type { PlanOptions } from '../../protocol/modbus/planner.js';
import type { Driver, DriverContext, PointWrite, RawValue } from '../types.js';
import { BusOwner, LinkDownError, PRIORITY, type BusIo, type BusOwnerOptions } from './bus-owner.js';
import { DEFAULT_HEALTH, type HealthOptions } from './device-health.js';
import { REOPEN_MAX_MS, REOPEN_MIN_MS } from './reopen.js';
import { compileDevice, decodeResponse, planGroup, type CompiledDevice, type MergeLevel, type ModbusPoint } from './device-plan.js';
import { ModbusExceptionError } from './errors.js';
import { Poller } from './poller.js';
import { READ_FC, type ModbusTransport } from './transport.js';
import { scanUnits } from './link.js';
import { busDoctorIo } from './doctor/bus-io.js';
import { executeWrites, planWrites } from './writer.js';
import { placeSunspecPoints, walkSunspec } from './sunspec.js';
import { RawImage } from './raw-image.js';
import { createRawAccess } from './raw-access.js';

const sunspecPending = (d: CompiledDevice): GatewayError =>
  new GatewayError('SUNSPEC_PENDING', `the SunSpec map of ${d.id} is not found yet (no answer from unit ${d.unit} so far)`);

/** Knobs that are not user config; tests shorten them. */
export interface ModbusTuning {
  health?: Partial<HealthOptions>;
  reopenMinMs?: number;
  reopenMaxMs?: number;
  /** One-off use (the CLI's scan/read/write): no polling, no reopen loop, no bus-wide reopen after timeouts. */
  oneOff?: boolean;
}

export interface ModbusDriverParts {
  bus: BusConfig;
  devices: readonly ResolvedDevice[];
  ctx: DriverContext;
  transport: ModbusTransport;
  plan: PlanOptions;
  owner: Omit<BusOwnerOptions, 'busId' | 'log' | 'reopenMinMs' | 'reopenMaxMs'>;
  retries: number;
  tuning?: ModbusTuning;
}

/**
 * Registers the raw image may hold: twice what the plans read and the points span (a replan after an
 * exception, a SunSpec map placed later), plus a little for a device with an empty plan.
 */
function imageCapacity(devices: Iterable<CompiledDevice>): number {
  let n = 256;
  for (const d of devices) {
    for (const g of d.groups) for (const r of g.requests) n += 2 * r.count;
    for (const p of d.points.values()) n += 2 * p.width;
  }
  return n;
}

export function createModbusDriver(parts: ModbusDriverParts): Driver {
  const { bus, ctx, transport, tuning = {} } = parts;
  const log = ctx.log.child({ bus: bus.id, driver: bus.driver });
  const owner = new BusOwner(transport, {
    ...parts.owner,
    busId: bus.id,
    log,
    reopenMinMs: tuning.oneOff ? 60_000 : tuning.reopenMinMs ?? REOPEN_MIN_MS,
    reopenMaxMs: tuning.oneOff ? 60_000 : tuning.reopenMaxMs ?? REOPEN_MAX_MS,
    ...(tuning.oneOff ? { reopenAfterTimeouts: Infinity } : {}),
    onOpen: () => poller.linkUp(), // called from start(), after the poller exists
  });
  // An echoing adapter is worth one line in the journal: a write's copy is taken for its answer until `echo` is set.
  transport.onEcho?.((note) => log.warn({ link: transport.label }, note));
  // A port that refuses the bus's `rs485` setting (a pty, a USB adapter with automatic direction): one line, the bus runs.
  transport.onRs485?.((note) => log.warn({ link: transport.label }, note));
  const health = { ...DEFAULT_HEALTH, ...tuning.health };
  const devices = new Map<string, CompiledDevice>();
  /** The resolved config each compiled device came from: the same object on setDevices means unchanged. */
  const sources = new Map<string, ResolvedDevice>();
  for (const d of parts.devices) {
    devices.set(d.config.id, compileDevice(d, parts.plan, health));
    sources.set(d.config.id, d);
  }
  const image = new RawImage(imageCapacity(devices.values()));
  const poller = new Poller([...devices.values()], owner, {
    retries: parts.retries, timeoutMs: parts.owner.timeoutMs, sink: ctx.sink, clock: ctx.clock, log,
    onRaw: (unit, table, address, data, cycle, at) => image.put(unit, table, address, data, cycle, at),
  });

  const device = (id: string): CompiledDevice => {
    const d = devices.get(id);
    if (!d) throw unknownDevice();
    return d;
  };

  /** The wire requests of a write batch; encoding every value first is also the pre-flight check. */
  const planFor = (deviceId: string, values: readonly PointWrite[]): ReturnType<typeof planWrites> => {
    const d = device(deviceId);
    return planWrites(values.map(({ name, value }) => {
      const point = d.points.get(name);
      if (!point) throw unknownPoint(name);
      if (point.sunspec) throw sunspecPending(d);
      return { point, value: value as RawPointValue };
    }), d.write);
  };

  /**
   * On-demand requests obey the dead-unit backoff the poller keeps (issue 11 item 2): a backed-off unit
   * fails fast instead of holding the line for a timeout; their answers and timeouts feed the same health.
   */
  const guard = (d: CompiledDevice): void => {
    const now = ctx.clock.mono();
    if (d.health.degraded && now < d.health.probeAt) {
      throw new GatewayError('UNIT_BACKED_OFF',
        `unit ${d.unit} (${d.id}) on bus ${bus.id} is not answering; requests to it are paused, next try in ${Math.ceil((d.health.probeAt - now) / 1000)} s`);
    }
  };
  const note = (d: CompiledDevice, err: unknown, sentAt: number): void => {
    if (isGatewayError(err) && err.code === 'MODBUS_EXCEPTION') d.health.answered();
    else if (isDeviceFailure(err) && !(err instanceof LinkDownError)) d.health.failed(ctx.clock.mono(), poller.probeEveryMs(d), sentAt);
  };
  /**
   * A job's answer or failure goes into the device's health inside the job, before the bus owner takes its next
   * one: noted after the job's promise settled, the next job already ran its guard on the old health (20 reads/s
   * at a dead unit put two probes on the line per backoff period beside a CPU hog).
   */
  const atLine = <T>(d: CompiledDevice, run: (io: BusIo) => Promise<T>) => async (io: BusIo): Promise<T> => {
    const sentAt = ctx.clock.mono();
    d.health.claim(sentAt, poller.probeEveryMs(d)); // a request to a degraded unit is its probe (device-health.ts)
    try {
      const out = await run(io);
      d.health.answered();
      return out;
    } catch (err) {
      note(d, err, sentAt);
      throw err;
    }
  };
  /**
   * The guard again when the job reaches the line: requests queued behind a probe that timed out would
   * otherwise each be a probe of their own, a timeout each (20 reads/s at a dead unit queued six behind every
   * probe and held the line 17 × 300 ms in 8 s).
   */
  const onLine = <T>(d: CompiledDevice, run: (io: BusIo) => Promise<T>) => (io: BusIo): Promise<T> => {
    guard(d);
    return atLine(d, run)(io);
  };

  /**
   * `level`: how finely the points are merged into requests (device-plan.ts). A multi-point request refused with
   * exception 2 or 3 (a device that lacks the registers in between) is read again one level finer, as the poller
   * steps down: a test read and a probe then find what the saved device's polls will read.
   */
  const readPoints = async (d: CompiledDevice, points: readonly ModbusPoint[], errors?: Record<string, string>,
    level: MergeLevel = 0): Promise<Record<string, RawValue>> => {
    const values: Record<string, RawValue> = {};
    // Only a device this bus polls is held to its backoff: a probe's device (compiled for the probe, its health
    // nobody's) reads every point, so each says why it failed.
    const polled = devices.get(d.id) === d;
    for (const request of planGroup(points, d.planOptions, level)) {
      try {
        const ask = (io: BusIo): Promise<unknown> =>
          io.request(d.unit, { fc: READ_FC[request.table], address: request.address, count: request.count }, d.health.suspect ? 0 : parts.retries);
        const data = await owner.enqueue(PRIORITY.read, polled ? onLine(d, ask) : atLine(d, ask));
        Object.assign(values, decodeResponse(request, data as (number | boolean)[]));
      } catch (err) {
        if (level < 2 && request.points.length > 1 && err instanceof ModbusExceptionError && (err.exception === 2 || err.exception === 3)) {
          Object.assign(values, await readPoints(d, request.points.map((p) => p.ref), errors, (level + 1) as MergeLevel));
          continue;
        }
        if (!errors) throw err;
        for (const p of request.points) errors[p.ref.name] = err instanceof Error ? err.message : String(err);
      }
    }
    // A point read from a SunSpec float model goes with its scale factor, 0 there by definition.
    const constants = d.sunspec?.constants ?? {};
    for (const p of points) if (p.scaleFactor !== undefined && p.scaleFactor in constants) values[p.scaleFactor] = constants[p.scaleFactor]!;
    return values;
  };
  const raw = createRawAccess({
    owner, image, clock: ctx.clock, sink: ctx.sink, retries: parts.retries,
    device: (id) => devices.get(id), guard, atLine, readPoints,
  });
  /** Identical reads in flight share one request (ten dashboards asking for the same point cost one). */
  const inflight = new Map<string, Promise<Record<string, RawValue>>>();

  return {
    busId: bus.id,
    raw,

    async start() {
      for (const d of devices.values()) {
        for (const problem of d.problems) log.error({ device: d.id }, `modbus config: ${problem}`);
      }
      await owner.start();
      if (!tuning.oneOff) poller.start();
    },

    async stop() {
      await poller.stop();
      await owner.stop();
    },

    async setDevices(next) {
      const wanted = new Map(next.map((d) => [d.config.id, d]));
      for (const id of [...devices.keys()]) {
        if (wanted.get(id) === sources.get(id)) continue;
        const gone = devices.get(id);
        devices.delete(id);
        sources.delete(id);
        if (gone && ![...devices.values()].some((o) => o.unit === gone.unit)) image.clear(gone.unit);
      }
      for (const [id, d] of wanted) {
        if (devices.has(id)) continue;
        const compiled = compileDevice(d, parts.plan, health);
        for (const problem of compiled.problems) log.error({ device: id }, `modbus config: ${problem}`);
        devices.set(id, compiled);
        sources.set(id, d);
      }
      image.setCapacity(imageCapacity(devices.values()));
      poller.setDevices([...devices.values()]);
    },

    scan: (from, to) => scanUnits(owner, from, to),
    doctorIo: () => busDoctorIo(owner, transport.kind, parts.owner.timeoutMs, () => transport.echoes?.() ?? false),

    async read(deviceId: string, names: readonly string[]): Promise<Record<string, RawValue>> {
      const d = device(deviceId);
      const points = names.map((n) => d.points.get(n) ?? (() => { throw unknownPoint(n); })());
      if (points.some((p) => p.sunspec)) throw sunspecPending(d);
      guard(d);
      const key = `${deviceId}\u0000${[...names].sort().join('\u0000')}`;
      let pending = inflight.get(key);
      if (!pending) {
        pending = readPoints(d, points).finally(() => inflight.delete(key));
        inflight.set(key, pending);
      }
      return pending;
    },

    async probe(resolved) {
      const d = compileDevice(resolved, parts.plan, health);
      if (d.problems.length > 0) throw new GatewayError('CONFIG_INVALID', d.problems.join('; '));
      const errors: Record<string, string> = {};
      if (d.sunspec) {
        const models = await walkSunspec((address, count) => owner.enqueue(PRIORITY.read, atLine(d, (io) =>
          io.request(d.unit, { fc: 3, address, count }, parts.retries))) as Promise<number[]>, d.sunspec!.search);
        for (const name of placeSunspecPoints(d, models)) errors[name] = `not in this device's SunSpec models (${[...models.keys()].join(', ')})`;
      }
      const readable = [...d.points.values()].filter((p) => p.access !== 'W' && p.sunspecCheck === undefined);
      return { values: { ...await readPoints(d, readable, errors), ...d.sunspec?.constants }, errors };
    },

    check(deviceId, values) {
      planFor(deviceId, values);
    },

    async write(deviceId: string, values: readonly PointWrite[]): Promise<void> {
      const d = device(deviceId);
      const ops = planFor(deviceId, values); // throws INVALID_VALUE before anything is queued
      if (ops.length === 0) return;
      guard(d);
      await owner.enqueue(PRIORITY.write, onLine(d, (io) => executeWrites(io, d.unit, ops, parts.retries, d.write)));
    },

    stats() {
      const perDevice: Record<string, unknown> = {};
      const degraded: string[] = [];
      for (const d of devices.values()) {
        const u = owner.units.get(d.unit);
        if (d.health.degraded) degraded.push(d.id);
        perDevice[d.id] = {
          unitId: d.unit,
          requests: u?.requests ?? 0,
          timeouts: u?.timeouts ?? 0,
          crcErrors: u?.crcErrors ?? 0,
          exceptions: u?.exceptions ?? 0,
          lastRttMs: u?.lastRttMs ?? null,
          pollCycleMs: Object.fromEntries(d.groups.map((g) => [`${g.intervalMs}ms`, g.lastCycleMs])),
          readsPerCycle: d.groups.reduce((n, g) => n + g.requests.length, 0),
          degraded: d.health.degraded,
          failuresInRow: d.health.consecutiveFailures,
          degradations: d.health.degradations,
        };
      }
      const t = owner.totals;
      return {
        bus: {
          id: bus.id,
          driver: bus.driver,
          link: owner.label,
          open: owner.open,
          requests: t.requests,
          timeouts: t.timeouts,
          crcErrors: t.crcErrors,
          exceptions: t.exceptions,
          errors: t.errors,
          reopens: Math.max(0, t.opens - 1),
          scanProbes: t.scanProbes,
          scanUnanswered: t.scanUnanswered,
          strayAnswers: owner.strayAnswers,
          lastRttMs: t.lastRttMs,
          queueDepth: owner.queueDepth,
          rawImageBytes: image.bytes,
          lastError: t.lastError,
          degradedDevices: degraded,
        },
        devices: perDevice,
      };
    },
  };
}
