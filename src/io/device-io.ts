/**
 * The read/write pipeline every driver shares (DESIGN §3 rule 6, seed rule 9): validate the whole batch,
 * store writeValue/writeAt, send through the bus's driver, then read the written points back at once so
 * the shadow holds the value actually read. Failures feed MayBeOffline.
 */
import type { ResolvedDevice } from '../config/types.js';
import {
  GatewayError, badRequest, isDeviceFailure, isGatewayError, pointReadonly, pointWriteonly, readNotSupported, unknownDevice, unknownPoint,
} from '../core/errors.js';
import type { DeviceIO, WriteRequest } from '../core/io.js';
import { toRaw } from '../core/point-value.js';
import type { Shadow } from '../core/shadow.js';
import type { Value } from '../core/types.js';
import type { Driver, PointWrite } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';
import type { ShadowSink } from './sink.js';

export interface PipelineDeps {
  shadow: Shadow;
  devices: ReadonlyMap<string, ResolvedDevice>;
  /** Driver per bus id. */
  drivers: ReadonlyMap<string, Driver>;
  sink: ShadowSink;
  log: Logger;
  /** Why a bus that failed to start is not running (buses part), by bus id. */
  busErrors?: ReadonlyMap<string, string>;
}

/** Errors from drivers that are not ours (timeouts of libraries, I/O) become typed driver errors. */
const asDriverError = (err: unknown): GatewayError =>
  isGatewayError(err) ? err : new GatewayError('DRIVER_ERROR', `device request failed: ${err instanceof Error ? err.message : String(err)}`);

export function createDeviceIO(deps: PipelineDeps): DeviceIO {
  const { shadow, devices, drivers, sink, log } = deps;
  const notRunning = (bus: string): GatewayError => {
    const why = deps.busErrors?.get(bus);
    return new GatewayError('DRIVER_ERROR', `bus ${bus} is not running${why ? `: ${why}` : ''}`);
  };

  const target = (id: string): { device: ResolvedDevice; driver: Driver | undefined } => {
    const device = devices.get(id);
    if (!device) throw unknownDevice();
    return { device, driver: drivers.get(device.config.bus) };
  };

  const readNow = async (id: string, driver: Driver, names: readonly string[]): Promise<void> => {
    if (!driver.read) throw readNotSupported();
    let raw;
    try {
      raw = await driver.read(id, names);
    } catch (err) {
      if (isDeviceFailure(err)) shadow.MayBeOffline(id);
      throw asDriverError(err);
    }
    sink.apply(id, raw);
  };

  return {
    async readPoint(id, point) {
      const { device, driver } = target(id);
      const model = device.points.get(point);
      if (!model) throw unknownPoint(point);
      if (model.access === 'W') throw pointWriteonly(point);
      if (!driver) throw notRunning(device.config.bus);
      if (!driver.read) throw readNotSupported();
      await readNow(id, driver, [point]);
      return shadow.GetDevicePoint(id, point);
    },

    async writePoints(id, values: readonly WriteRequest[]) {
      const { device, driver } = target(id);
      if (!Array.isArray(values) || values.length === 0) throw badRequest('values must be a non-empty array');
      // Validate the whole batch before anything is stored or sent: one bad entry writes nothing.
      const seen = new Set<string>();
      const checked: { name: string; value: Value; raw: PointWrite['value'] }[] = [];
      for (const { name, value } of values) {
        const model = device.points.get(name);
        if (!model) throw unknownPoint(name);
        if (model.access === 'R') throw pointReadonly();
        if (seen.has(name)) throw badRequest(`point ${name} appears twice in one write`);
        seen.add(name);
        checked.push({ name, ...toRaw(model, value) });
      }
      if (!driver) throw notRunning(device.config.bus);
      const writes = checked.map(({ name, raw }) => ({ name, value: raw }));
      // Rule 10: a value the device cannot take is refused before anything is stored or sent.
      driver.check?.(id, writes);
      for (const w of checked) shadow.SetWritePointValue(id, w.name, w.value);
      try {
        await driver.write(id, writes);
      } catch (err) {
        if (isDeviceFailure(err)) shadow.MayBeOffline(id);
        throw asDriverError(err);
      }
      const readable = checked.filter((w) => device.points.get(w.name)!.access === 'RW').map((w) => w.name);
      if (readable.length === 0 || !driver.read) return;
      // The write itself went through; a failed read-back is logged and counted, not reported as a failed write.
      await readNow(id, driver, readable).catch((err: unknown) =>
        log.warn({ device: id, err: err instanceof Error ? err.message : err }, 'read-back after write failed'));
    },
  };
}
