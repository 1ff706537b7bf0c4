/**
 * Shadow ingest: point updates/s with change detection and one dataChange listener, against a plain
 * Map-of-objects shadow doing the same work, measured in the same run.
 */
import { Shadow } from '../../src/core/shadow.js';
import type { Value } from '../../src/core/types.js';
import { report, type Result } from './report.js';

const DEVICES = 1000;
const POINTS = 100;
const ROUNDS = 30;

/** The baseline: what a straightforward implementation would do (objects in maps, same semantics). */
class MapShadow {
  private readonly devices = new Map<string, { updatedAt: number; points: Map<string, { value: Value; updatedAt: number }> }>();
  constructor(private readonly listener: (id: string, changes: { name: string; value: Value }[]) => void) {}
  add(id: string): void {
    this.devices.set(id, { updatedAt: 0, points: new Map() });
  }
  set(id: string, values: Record<string, Value>, now: number): void {
    const dev = this.devices.get(id);
    if (!dev) throw new Error('unknown device');
    const changes: { name: string; value: Value }[] = [];
    for (const name in values) {
      const v = values[name]!;
      const p = dev.points.get(name);
      if (!p) dev.points.set(name, { value: v, updatedAt: now });
      else {
        if (p.value !== v) changes.push({ name, value: v });
        p.value = v;
        p.updatedAt = now;
      }
    }
    dev.updatedAt = now;
    if (changes.length) this.listener(id, changes);
  }
}

function batches(): Record<string, Value>[][] {
  // Two alternating value sets per device: every other round changes half the points.
  return [0, 1].map((round) =>
    Array.from({ length: DEVICES }, () => {
      const values: Record<string, Value> = {};
      for (let p = 0; p < POINTS; p++) values[`p${p}`] = p % 2 === 0 ? p * 1.5 : p + round;
      return values;
    }));
}

function measure(run: (round: number) => void): number {
  run(0); // warm-up
  run(1);
  const t0 = performance.now();
  for (let r = 0; r < ROUNDS; r++) run(r);
  const seconds = (performance.now() - t0) / 1000;
  return (ROUNDS * DEVICES * POINTS) / seconds;
}

export function benchIngest(): Result[] {
  const data = batches();
  const ids = Array.from({ length: DEVICES }, (_, i) => `dev-${i}`);
  let seen = 0;
  const shadow = new Shadow({ maxDevices: DEVICES, maxPoints: DEVICES * POINTS, defaultTtl: 300_000 });
  shadow.bus.on('bench', 'dataChange', (e) => (seen += e.values.length));
  for (const id of ids) shadow.AddDevice(id, 'bench');
  let baseSeen = 0;
  const base = new MapShadow((_, c) => (baseSeen += c.length));
  for (const id of ids) base.add(id);
  const baseline = measure((r) => {
    const set = data[r % 2]!;
    const now = Date.now();
    for (let d = 0; d < DEVICES; d++) base.set(ids[d]!, set[d]!, now);
  });
  const byName = measure((r) => {
    const set = data[r % 2]!;
    for (let d = 0; d < DEVICES; d++) shadow.SetDevicePoints(ids[d]!, set[d]!);
  });
  if (seen === 0 || baseSeen === 0) throw new Error('change detection saw nothing: the bench is broken');
  return [
    // SetDevicePoints with a record is the path every driver's sink takes (io/sink.ts).
    { name: 'ingest: point updates/s (SetDevicePoints, the drivers\' path)', measured: byName, target: 2_000_000, unit: 'updates/s', higherIsBetter: true },
    { name: 'ingest vs Map-of-objects baseline', measured: byName / baseline, target: 2, unit: '×', higherIsBetter: true,
      note: `baseline ${Math.round(baseline).toLocaleString('en')} updates/s` },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) report(benchIngest());
