/**
 * Shadow, per-device and per-bus metrics. Per-device series carry the labels `device`, `bus` and `unit`
 * (the Modbus unit id; empty for other drivers). A Modbus unit's request counters are the unit's on the
 * line — two devices on one unit share them — so they are per (bus, unit), not repeated per device.
 */
import type { Collector, DeviceLabelSource, Labels, MetricSink } from './metrics-types.js';
import { fromStats, isRecord, type StatTable } from './metrics-stats.js';

const DEVICE_LABELS = ['device', 'bus', 'unit'] as const;

export const shadowCollector: Collector = (sink, { shadow }) => {
  const stats = shadow.stats();
  const byState = sink.gauge('shadowgate_devices', 'Devices in the shadow, by state.', ['state']);
  for (const [state, n] of Object.entries(stats.states)) byState(n, { state });
  sink.gauge('shadowgate_devices_online', 'Devices in the shadow that are online.')(stats.onlineDevices);
  sink.gauge('shadowgate_points', 'Data points held in the shadow.')(stats.dataPoints);
  sink.gauge('shadowgate_shadow_free_point_slots', 'Point slots still free in the shadow table.')(stats.freePointSlots);
  sink.gauge('shadowgate_shadow_table_bytes', 'Memory allocated for the shadow table, bytes.')(stats.allocatedBytes);
};

/**
 * Each configured device's labels, kept for as long as its configuration is (a new config is a new array): the
 * same objects every scrape, so their text is formatted once (metrics-text.ts), not for 1,000 devices a scrape.
 */
const labelsByConfig = new WeakMap<readonly DeviceLabelSource[], Map<string, Labels>>();
const NO_DEVICES: readonly DeviceLabelSource[] = [];

function labelsOf(devices: readonly DeviceLabelSource[] = NO_DEVICES): Map<string, Labels> {
  const known = labelsByConfig.get(devices);
  // A config is replaced, not edited, when devices change; the size check is a guard against an edit in place.
  if (known?.size === devices.length) return known;
  const out = new Map<string, Labels>();
  for (const d of devices) out.set(d.id, { device: d.id, bus: d.bus, unit: d.unit_id === undefined ? '' : String(d.unit_id) });
  labelsByConfig.set(devices, out);
  return out;
}

/** Every device of the shadow: online, and how old its newest value is. */
export const deviceCollector: Collector = (sink, { shadow, devices, now = Date.now }) => {
  const labels = labelsOf(devices);
  const online = sink.gauge('shadowgate_device_online', 'Whether the device is online (1) or not (0).', DEVICE_LABELS);
  const age = sink.gauge('shadowgate_device_last_update_age_seconds',
    'Seconds since the device last delivered a value (absent until it has delivered one).', DEVICE_LABELS);
  const t = now();
  for (const id of shadow.GetDeviceIds()) {
    const l = labels.get(id) ?? { device: id, bus: '', unit: '' };
    online(shadow.GetDeviceStatus(id) ? 1 : 0, l);
    const at = shadow.GetDeviceUpdateAt(id);
    if (at > 0) age(Math.max(0, (t - at) / 1000), l);
  }
};

const MODBUS_BUS: StatTable = {
  id: 'skip', driver: 'skip', link: 'skip', lastError: 'skip', degradedDevices: 'skip',
  open: ['open', 'gauge', 'Whether the bus link (serial port or TCP connection) is open (1) or not (0).'],
  requests: ['requests', 'counter', 'Modbus requests sent on the bus.'],
  timeouts: ['timeouts', 'counter', 'Modbus requests on the bus that got no answer in time.'],
  crcErrors: ['crc_errors', 'counter', 'Answers on the bus with a bad CRC.'],
  exceptions: ['exceptions', 'counter', 'Modbus exception answers on the bus.'],
  errors: ['errors', 'counter', 'Other failed requests on the bus (link errors).'],
  reopens: ['reopens', 'counter', 'Times the bus link was reopened after a failure.'],
  strayAnswers: ['stray_answers', 'counter', 'Late answers to requests that had timed out, dropped (TCP: by transaction id; RTU: by unit, function, length and CRC).'],
  lastRttMs: ['last_rtt_seconds', 'ms', 'Round-trip time of the last answered request on the bus, seconds.'],
  queueDepth: ['queue_depth', 'gauge', 'Requests waiting for the bus.'],
  scanProbes: ['scan_probes', 'counter', 'Unit-id scan probes sent on the bus (not counted in requests).'],
  scanUnanswered: ['scan_unanswered', 'counter', 'Unit-id scan probes no unit answered (not counted in timeouts).'],
  rawImageBytes: ['raw_image_bytes', 'gauge', 'Memory held by the bus\'s copy of the registers last read (what the Modbus server answers from), bytes.'],
};

const MODBUS_UNIT: StatTable = {
  requests: ['requests', 'counter', 'Modbus requests sent to the unit.'],
  timeouts: ['timeouts', 'counter', 'Requests to the unit that got no answer in time.'],
  crcErrors: ['crc_errors', 'counter', 'Answers from the unit with a bad CRC.'],
  exceptions: ['exceptions', 'counter', 'Modbus exception answers from the unit.'],
  lastRttMs: ['last_rtt_seconds', 'ms', 'Round-trip time of the unit\'s last answer, seconds.'],
};

const MODBUS_DEVICE: StatTable = {
  unitId: 'skip', requests: 'skip', timeouts: 'skip', crcErrors: 'skip', exceptions: 'skip', lastRttMs: 'skip', pollCycleMs: 'skip',
  readsPerCycle: ['reads_per_cycle', 'gauge', 'Modbus reads one poll of the device takes (all its poll groups).'],
  degraded: ['degraded', 'gauge', 'Whether the device is polled at a reduced rate after failures (1) or not (0).'],
  failuresInRow: ['consecutive_failures', 'gauge', 'Polls of the device that failed in a row.'],
  degradations: ['degradations', 'counter', 'Times the device was put on the reduced poll rate.'],
};

/** The simulator's and GPIO's flat figures. */
const FLAT_BUS: StatTable = {
  driver: 'skip', backend: 'skip', chip: 'skip',
  devices: ['devices', 'gauge', 'Devices on the bus.'],
  reads: ['reads', 'counter', 'Reads done by the bus\'s driver.'],
  writes: ['writes', 'counter', 'Writes done by the bus\'s driver.'],
  failures: ['failures', 'counter', 'Reads and writes of the bus\'s driver that failed.'],
  lines: ['gpio_lines', 'gauge', 'GPIO lines open on the bus.'],
  failed: ['gpio_failed_lines', 'gauge', 'GPIO lines of the bus that could not be opened.'],
  polled_fallback: ['gpio_polled_lines', 'gauge', 'GPIO inputs read by polling (no edge events).'],
};

function modbusDevices(sink: MetricSink, bus: string, devices: unknown, units: Set<string>): void {
  if (!isRecord(devices)) return;
  const cycle = sink.gauge('shadowgate_device_poll_cycle_seconds',
    'Duration of the device\'s last poll cycle, by poll interval, seconds.', [...DEVICE_LABELS, 'interval']);
  for (const [device, d] of Object.entries(devices)) {
    if (!isRecord(d)) continue;
    const unit = d['unitId'] === undefined ? '' : String(d['unitId']);
    const labels = { device, bus, unit };
    fromStats(sink, 'shadowgate_device', d, MODBUS_DEVICE, labels);
    if (isRecord(d['pollCycleMs'])) {
      for (const [interval, ms] of Object.entries(d['pollCycleMs'])) {
        if (typeof ms === 'number') cycle(ms / 1000, { ...labels, interval });
      }
    }
    if (!units.has(unit)) {
      units.add(unit);
      const figures = Object.fromEntries(Object.keys(MODBUS_UNIT).map((k) => [k, d[k]]));
      fromStats(sink, 'shadowgate_modbus_unit', figures, MODBUS_UNIT, { bus, unit });
    }
  }
}

/** Each running bus: what its driver reports. */
export const busCollector: Collector = (sink, { buses }) => {
  const info = sink.gauge('shadowgate_bus_info', 'A running bus and its driver (always 1).', ['bus', 'driver']);
  for (const [bus, stats] of Object.entries(buses)) {
    if (!isRecord(stats)) continue;
    if (isRecord(stats['bus'])) {
      const b = stats['bus'];
      info(1, { bus, driver: String(b['driver'] ?? 'modbus') });
      fromStats(sink, 'shadowgate_bus', b, MODBUS_BUS, { bus });
      if (Array.isArray(b['degradedDevices'])) {
        sink.gauge('shadowgate_bus_degraded_devices', 'Devices of the bus on a reduced poll rate.', ['bus'])(b['degradedDevices'].length, { bus });
      }
      modbusDevices(sink, bus, stats['devices'], new Set());
    } else {
      info(1, { bus, driver: String(stats['driver'] ?? (stats['backend'] !== undefined ? 'gpio' : 'unknown')) });
      fromStats(sink, 'shadowgate_bus', stats, FLAT_BUS, { bus });
    }
  }
};
