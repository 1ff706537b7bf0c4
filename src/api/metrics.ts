/**
 * Prometheus text exposition (`GET /metrics`, outside /api/v1): shadow counts, persistence, every bus's
 * driver figures (requests, timeouts, CRC errors, RTT, queue depth, cycle times), MQTT and history.
 * Driver and exporter stats are flattened generically, so a figure added to a driver's stats() shows
 * up here without touching this file: numbers become gauges, `devices` maps become a device label.
 */
import type { Shadow } from '../core/shadow.js';

export interface MetricsInputs {
  shadow: Shadow;
  persist: Record<string, unknown>;
  /** Each running bus's driver figures by bus id. */
  buses: Record<string, unknown>;
  parts: Record<string, Record<string, unknown>>;
}

type Labels = Record<string, string>;

const metricName = (parts: string[]): string =>
  `shadowgate_${parts.join('_')}`.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[^a-zA-Z0-9_]/g, '_').toLowerCase();

const labelText = (labels: Labels): string => {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  const esc = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return `{${entries.map(([k, v]) => `${k}="${esc(v)}"`).join(',')}}`;
};

/** Numeric and boolean leaves of a stats object as samples; `devices` maps become a `device` label. */
function flatten(value: unknown, path: string[], labels: Labels, out: Map<string, string[]>): void {
  if (typeof value === 'number' && Number.isFinite(value)) add(out, metricName(path), labels, value);
  else if (typeof value === 'boolean') add(out, metricName(path), labels, value ? 1 : 0);
  else if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (key === 'devices' && child && typeof child === 'object' && !Array.isArray(child)) {
        for (const [device, stats] of Object.entries(child)) flatten(stats, [...path, 'device'], { ...labels, device }, out);
      } else if (/^\d+$/.test(key)) {
        flatten(child, path, { ...labels, key }, out); // e.g. poll cycle per interval
      } else {
        flatten(child, [...path, key], labels, out);
      }
    }
  }
}

function add(out: Map<string, string[]>, name: string, labels: Labels, value: number): void {
  const lines = out.get(name) ?? [];
  lines.push(`${name}${labelText(labels)} ${value}`);
  out.set(name, lines);
}

export function renderMetrics({ shadow, persist, buses, parts }: MetricsInputs): string {
  const out = new Map<string, string[]>();
  const stats = shadow.stats();
  for (const [state, n] of Object.entries(stats.states)) add(out, 'shadowgate_devices', { state }, n);
  add(out, 'shadowgate_devices_online', {}, stats.onlineDevices);
  add(out, 'shadowgate_points', {}, stats.dataPoints);
  add(out, 'shadowgate_shadow_free_point_slots', {}, stats.freePointSlots);
  add(out, 'shadowgate_shadow_table_bytes', {}, stats.allocatedBytes);
  flatten({ ...persist, ok: !persist.lastError }, ['persist'], {}, out);
  for (const [bus, stats] of Object.entries(buses)) flatten(stats, ['bus'], { bus }, out);
  for (const [part, partStats] of Object.entries(parts)) flatten(partStats, [part], {}, out);
  add(out, 'shadowgate_process_resident_memory_bytes', {}, process.memoryUsage.rss());
  let text = '';
  for (const [name, lines] of out) text += `# TYPE ${name} gauge\n${lines.join('\n')}\n`;
  return text;
}
