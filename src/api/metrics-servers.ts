/** Metrics of the Modbus servers: per server, per unit and per client, labelled (never one name per unit). */
import type { Collector, MetricSink } from './metrics-types.js';
import { isRecord } from './metrics-stats.js';

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

const COUNTS = [
  ['requests', 'Requests answered'],
  ['hits', 'Reads answered from the last poll (no bus frame)'],
  ['misses', 'Reads that went to the bus or shared a read in flight'],
  ['writes', 'Writes sent to the device'],
] as const;

/** A server's latency bucket bounds (seconds, ascending), as its stats give them. */
const boundsOf = (v: unknown): number[] | undefined =>
  Array.isArray(v) && v.length > 0 && v.every((b) => num(b) !== undefined) ? (v as number[]) : undefined;

function counts(sink: MetricSink, by: 'unit' | 'client', server: string, table: unknown, bounds: number[] | undefined): void {
  if (!isRecord(table)) return;
  const labels = ['server', by] as const;
  for (const [key, c] of Object.entries(table)) {
    if (!isRecord(c)) continue;
    for (const [field, help] of COUNTS) {
      const v = num(c[field]);
      if (v !== undefined) sink.counter(`shadowgate_modbus_server_${by}_${field}_total`, `${help}, by ${by}.`, labels)(v, { server, [by]: key });
    }
    const latency = c['latency'];
    if (bounds && isRecord(latency) && Array.isArray(latency['buckets']) && num(latency['sum']) !== undefined && num(latency['count']) !== undefined) {
      sink.histogram(`shadowgate_modbus_server_${by}_latency_seconds`, `Time from the server taking a request up to its answer, by ${by}.`, labels, bounds)(
        { buckets: latency['buckets'] as number[], sum: latency['sum'] as number, count: latency['count'] as number }, { server, [by]: key });
    }
    const codes = c['codes'];
    if (!isRecord(codes)) continue;
    const set = sink.counter(`shadowgate_modbus_server_${by}_exceptions_total`, `Exception answers by ${by} and exception code.`,
      ['server', by, 'code']);
    for (const [code, n] of Object.entries(codes)) {
      const v = num(n);
      if (v !== undefined) set(v, { server, [by]: key, code });
    }
  }
}

export const serversCollector: Collector = (sink, { parts }) => {
  const servers = parts['modbusServers'];
  if (!isRecord(servers)) return;
  for (const [server, s] of Object.entries(servers)) {
    if (!isRecord(s)) continue;
    // An RTU persona slave whose serial port is not open (yet, or any more) hears nothing: down while it retries.
    const up = s['running'] === false || s['open'] === false ? 0 : 1;
    sink.gauge('shadowgate_modbus_server_up', 'Whether the Modbus server listens (1) or failed to start or lost its serial port (0).', ['server'])(up, { server });
    const connections = num(s['connections']);
    if (connections !== undefined) sink.gauge('shadowgate_modbus_server_connections', 'Client connections open.', ['server'])(connections, { server });
    const refused = num(s['refused']);
    if (refused !== undefined) sink.counter('shadowgate_modbus_server_refused_connections_total', 'Connections refused (allow list, max_clients).', ['server'])(refused, { server });
    const bounds = boundsOf(s['latencyBounds']);
    const discarded = num(s['discardedBytes']);
    if (discarded !== undefined) sink.counter('shadowgate_modbus_server_discarded_bytes_total', 'RTU over TCP: bytes dropped as no request (bad CRC, noise).', ['server'])(discarded, { server });
    counts(sink, 'unit', server, s['units'], bounds);
    counts(sink, 'client', server, s['clients'], bounds);
  }
};
