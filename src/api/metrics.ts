/**
 * Prometheus text exposition (`GET /metrics`, outside /api/v1), by Prometheus' conventions so
 * `promtool check metrics` passes: every metric has HELP, counters end in `_total`, durations are
 * seconds, what varies (bus, device, unit, poll interval) is a label, never part of a name.
 *
 * Everything is read when scraped (nothing is counted twice on hot paths): each scrape builds a fresh
 * prom-client registry from the parts' stats() and renders it. The figures come from collectors, one
 * function per source; a new source (a server's per-client figures) is one more Collector handed to
 * renderMetrics — see metrics-buses.ts and metrics-parts.ts for examples.
 */
import { Counter, Gauge, Registry, type Metric } from 'prom-client';
import { busCollector, deviceCollector, shadowCollector } from './metrics-buses.js';
import { partsCollector, processCollector } from './metrics-parts.js';
import { serversCollector } from './metrics-servers.js';
import type { Collector, MetricSink, MetricsInputs, SetHistogram, SetSample } from './metrics-types.js';

export type { Collector, DeviceLabelSource, Labels, MetricSink, MetricsInputs, SetSample } from './metrics-types.js';

/** The gateway's own collectors, in exposition order. */
const BUILT_IN: readonly Collector[] = [shadowCollector, deviceCollector, busCollector, partsCollector, serversCollector, processCollector];

function createSink(registry: Registry): MetricSink {
  const setters = new Map<string, SetSample>();
  const declare = (kind: 'gauge' | 'counter', name: string, help: string, labelNames: readonly string[]): SetSample => {
    const known = setters.get(name);
    if (known) return known;
    if (kind === 'counter' && !name.endsWith('_total')) throw new Error(`counter ${name} must end in _total`);
    let set: SetSample;
    if (kind === 'gauge') {
      const g = new Gauge({ name, help, labelNames, registers: [registry] });
      set = (value, labels = {}) => {
        if (Number.isFinite(value)) g.set(labels, value);
      };
    } else {
      const c = new Counter({ name, help, labelNames, registers: [registry] });
      // A fresh registry per scrape: the one increment is the part's running total.
      set = (value, labels = {}) => {
        if (Number.isFinite(value) && value >= 0) c.inc(labels, value);
      };
    }
    setters.set(name, set);
    return set;
  };
  const histograms = new Map<string, SetHistogram>();
  /**
   * prom-client's Histogram only takes observations; a histogram counted elsewhere (a Modbus server's
   * latency) is handed to the registry as a metric object of the shape its exposition reads (get()).
   */
  const histogram = (name: string, help: string, labelNames: readonly string[], bounds: readonly number[]): SetHistogram => {
    const known = histograms.get(name);
    if (known) return known;
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    registry.registerMetric({ name, get: () => ({ name, help, type: 'histogram', values, aggregator: 'sum' }) } as unknown as Metric);
    const set: SetHistogram = (state, labels = {}) => {
      for (const key of Object.keys(labels)) if (!labelNames.includes(key)) throw new Error(`histogram ${name} has no label ${key}`);
      let cumulative = 0;
      bounds.forEach((le, i) => {
        cumulative += state.buckets[i] ?? 0;
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: state.count });
      values.push({ metricName: `${name}_sum`, labels, value: state.sum });
      values.push({ metricName: `${name}_count`, labels, value: state.count });
    };
    histograms.set(name, set);
    return set;
  };
  return {
    histogram,
    gauge: (name, help, labelNames = []) => declare('gauge', name, help, labelNames),
    counter: (name, help, labelNames = []) => declare('counter', name, help, labelNames),
  };
}

export const METRICS_CONTENT_TYPE = new Registry().contentType;

/** The exposition text of the built-in collectors and `extra` ones (e.g. a Modbus TCP server's clients). */
export async function renderMetrics(inputs: MetricsInputs, extra: readonly Collector[] = []): Promise<string> {
  const registry = new Registry();
  const sink = createSink(registry);
  for (const collect of [...BUILT_IN, ...extra]) collect(sink, inputs);
  return registry.metrics();
}
