import type { DeviceConfig, ModelConfig, PointConfig, ResolvedDevice } from '../../src/config/types.js';

/** A ResolvedDevice for driver/pipeline tests, without going through the config loader. */
export function resolved(id: string, points: Partial<PointConfig>[], extra: Partial<DeviceConfig> = {}): ResolvedDevice {
  const full: PointConfig[] = points.map((p) => ({ type: 'float', access: 'R', scale: 1, offset: 0, report: 'change', name: 'p', ...p }));
  const model: ModelConfig = { name: `${id}-model`, points: full };
  return {
    config: { id, model: model.name, bus: 'sim', poll: 1000, ...extra },
    model,
    points: new Map(full.map((p) => [p.name, p])),
    ttl: 60_000,
  };
}
