/**
 * Prometheus text exposition (`GET /metrics`, outside /api/v1), by Prometheus' conventions so
 * `promtool check metrics` passes: every metric has HELP, counters end in `_total`, durations are
 * seconds, what varies (bus, device, unit, poll interval) is a label, never part of a name.
 *
 * Everything is read when scraped (nothing is counted twice on hot paths): each scrape collects the parts'
 * stats() into a fresh sink and renders it (metrics-text.ts). The figures come from collectors, one
 * function per source; a new source (a server's per-client figures) is one more Collector handed to
 * renderMetrics — see metrics-buses.ts and metrics-parts.ts for examples.
 */
import { busCollector, deviceCollector, shadowCollector } from './metrics-buses.js';
import { partsCollector, processCollector } from './metrics-parts.js';
import { serversCollector } from './metrics-servers.js';
import { textSink } from './metrics-text.js';
import type { Collector, MetricsInputs } from './metrics-types.js';

export type { Collector, DeviceLabelSource, Labels, MetricSink, MetricsInputs, SetSample } from './metrics-types.js';
export { METRICS_CONTENT_TYPE } from './metrics-text.js';

/** The gateway's own collectors, in exposition order. */
const BUILT_IN: readonly Collector[] = [shadowCollector, deviceCollector, busCollector, partsCollector, serversCollector, processCollector];

/** The exposition text of the built-in collectors and `extra` ones (e.g. a Modbus TCP server's clients). */
export async function renderMetrics(inputs: MetricsInputs, extra: readonly Collector[] = []): Promise<string> {
  const sink = textSink();
  for (const collect of [...BUILT_IN, ...extra]) collect(sink, inputs);
  return sink.render();
}
