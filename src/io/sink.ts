/** The DataSink drivers report to: applies each point's model and feeds the shadow (rules 1–3). */
import type { ResolvedDevice } from '../config/types.js';
import { isDeviceFailure } from '../core/errors.js';
import { fromRaw } from '../core/point-value.js';
import type { Shadow } from '../core/shadow.js';
import type { Value } from '../core/types.js';
import type { DataSink, RawValue } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';

export interface ShadowSink extends DataSink {
  /** Applies raw values now and returns the shadow values written (used by the read/write pipeline). */
  apply(deviceId: string, values: Record<string, RawValue>): Record<string, Value>;
}

export function createShadowSink(shadow: Shadow, devices: ReadonlyMap<string, ResolvedDevice>, log: Logger): ShadowSink {
  const apply = (deviceId: string, raw: Record<string, RawValue>): Record<string, Value> => {
    const device = devices.get(deviceId);
    const out: Record<string, Value> = {};
    if (!device) return out;
    for (const name in raw) {
      const point = device.points.get(name);
      const value = point ? fromRaw(point, raw[name]!) : undefined;
      if (value === undefined) {
        log.warn({ device: deviceId, point: name, raw: raw[name] }, 'value dropped: not a value of this point');
        continue;
      }
      out[name] = value;
    }
    // Atomic: one shadow update, one dataChange event per request.
    shadow.SetDevicePoints(deviceId, out);
    return out;
  };
  return {
    apply,
    data(deviceId, values) {
      try {
        apply(deviceId, values);
      } catch (err) {
        log.error({ err, device: deviceId }, 'shadow update failed');
      }
    },
    failure(deviceId, error) {
      log.debug({ device: deviceId, err: error.message }, 'request failed');
      // A Modbus exception is an answer from a live device: it updates nothing, and costs the device nothing.
      if (isDeviceFailure(error) && shadow.HasDevice(deviceId)) shadow.MayBeOffline(deviceId);
    },
  };
}
