/** The DataSink drivers report to: applies each point's model and feeds the shadow (rules 1–3). */
import type { ResolvedDevice } from '../config/types.js';
import { isDeviceFailure } from '../core/errors.js';
import { interpretRaw } from '../core/raw-values.js';
import type { Shadow } from '../core/shadow.js';
import type { DataSink, RawValue } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';

export interface ShadowSink extends DataSink {
  /** Applies raw values now (used by the read/write pipeline). */
  apply(deviceId: string, values: Record<string, RawValue>): void;
}

export function createShadowSink(shadow: Shadow, devices: ReadonlyMap<string, ResolvedDevice>, log: Logger): ShadowSink {
  /**
   * Last raw value of every scale-factor point (SunSpec), per device config: a readPoint of one scaled point
   * reads no scale factor with it and uses the last one polled.
   */
  const scaleFactors = new WeakMap<ResolvedDevice, Map<string, RawValue>>();
  const apply = (deviceId: string, raw: Record<string, RawValue>): void => {
    const device = devices.get(deviceId);
    if (!device) return;
    let known = scaleFactors.get(device);
    for (const p of device.points.values()) {
      if (p.scale_factor === undefined) continue;
      const r = raw[p.scale_factor];
      if (r !== undefined) (known ??= new Map()).set(p.scale_factor, r);
    }
    if (known) scaleFactors.set(device, known);
    const { values, unavailable, exact } = interpretRaw(device.points, raw, (name) => known?.get(name));
    // Atomic: one shadow update, one dataChange event per request; "not available" points are null with their reason.
    shadow.SetDevicePoints(deviceId, values, exact ? { unavailable, exact } : { unavailable });
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
