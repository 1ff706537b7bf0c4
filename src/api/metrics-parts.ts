/** Metrics of the other parts: persistence, MQTT (broker, exporter, bridge, shadow export), history, event loop, process. */
import type { Collector } from './metrics-types.js';
import { fromStats, isRecord, type StatTable } from './metrics-stats.js';

const PERSIST: StatTable = {
  lastError: 'skip', lastSaveAt: 'skip',
  lastSaveMs: ['last_save_duration_seconds', 'ms', 'Duration of the last shadow save (encode, write, fsync), seconds.'],
  lastStallMs: ['last_save_stall_seconds', 'ms', 'Event-loop time the last shadow save took (encoding the table), seconds.'],
  saves: ['saves', 'counter', 'Shadow saves to disk.'],
  seq: ['sequence', 'gauge', 'Sequence number of the newest saved shadow.'],
  deltaSaves: ['delta_saves', 'counter', 'Shadow saves written as a delta to the journal.'],
  fullSaves: ['full_saves', 'counter', 'Shadow saves written in full.'],
  journalBytes: ['journal_bytes', 'gauge', 'Size of the shadow journal, bytes.'],
};

const BROKER: StatTable = {
  tcpPort: 'skip', wsPort: 'skip',
  refusedConnects: ['refused_connects', 'counter', 'MQTT connections refused (bad login, not allowed).'],
  throttledConnects: ['throttled_connects', 'counter', 'MQTT connections refused for connecting too often.'],
  refusedPublishes: ['refused_publishes', 'counter', 'MQTT publishes refused by the ACL.'],
  refusedSubscribes: ['refused_subscribes', 'counter', 'MQTT subscriptions refused by the ACL.'],
  oversizedPackets: ['oversized_packets', 'counter', 'MQTT packets over the size limit (connection closed).'],
  published: ['published', 'counter', 'Messages the gateway published on its broker.'],
  clientPublishes: ['client_publishes', 'counter', 'Messages clients published on the broker.'],
  outboxDropped: ['outbox_dropped', 'counter', 'Messages dropped because the broker\'s outbox was full.'],
  outboxPending: ['outbox_pending', 'gauge', 'Messages waiting in the broker\'s outbox.'],
  clients: ['clients', 'gauge', 'MQTT clients connected.'],
  retained: ['retained', 'gauge', 'Retained messages held.'],
  retainedFileWrites: ['retained_file_writes', 'counter', 'Writes of the retained-message file.'],
};

const EXPORTER: StatTable = {
  states: ['states', 'counter', 'Device state messages published.'],
  events: ['events', 'counter', 'Event messages published.'],
  sets: ['sets', 'counter', 'Set commands received over MQTT.'],
  setsFailed: ['sets_failed', 'counter', 'Set commands received over MQTT that failed.'],
  setsRefused: ['sets_refused', 'counter', 'Set commands received over MQTT that were refused.'],
  pendingSets: ['pending_sets', 'gauge', 'Set commands in progress.'],
};

const BRIDGE: StatTable = {
  queueError: 'skip',
  connected: ['connected', 'gauge', 'Whether the bridge is connected to the upstream broker (1) or not (0).'],
  forwarded: ['forwarded', 'counter', 'Messages forwarded to the upstream broker.'],
  queued: ['queued', 'counter', 'Messages queued on disk while the upstream broker was unreachable.'],
  setsFromUpstream: ['sets_from_upstream', 'counter', 'Set commands received from the upstream broker.'],
  connects: ['connects', 'counter', 'Connections made to the upstream broker.'],
  inflight: ['inflight', 'gauge', 'Messages sent upstream and not yet acknowledged.'],
  queueMessages: ['queue_messages', 'gauge', 'Messages in the bridge\'s disk queue.'],
  queueBytes: ['queue_bytes', 'gauge', 'Size of the bridge\'s disk queue, bytes.'],
  dropped: ['dropped', 'counter', 'Messages dropped because the bridge\'s disk queue was full.'],
};

const SHADOW_EXPORT: StatTable = {
  http: 'skip', file: 'skip',
  exports: ['exports', 'counter', 'Periodic shadow exports made.'],
};
const HTTP_TARGET: StatTable = {
  sent: ['sent', 'counter', 'Shadow exports posted to the HTTP target.'],
  failures: ['failures', 'counter', 'Posts to the HTTP target that failed.'],
  dropped: ['dropped', 'counter', 'Shadow exports dropped while the HTTP target was unreachable.'],
  queued: ['queued', 'gauge', 'Shadow exports waiting for the HTTP target.'],
};
const FILE_TARGET: StatTable = {
  written: ['written', 'counter', 'Shadow exports written to the file.'],
  rotations: ['rotations', 'counter', 'Rotations of the export file.'],
  errors: ['errors', 'counter', 'Export file writes that failed.'],
  skipped: ['skipped', 'counter', 'Shadow exports skipped while a write was in flight.'],
};

const HISTORY: StatTable = {
  oldestTs: 'skip', lastError: 'skip', error: 'skip',
  enabled: ['enabled', 'gauge', 'Whether the history store is open (1) or not (0).'],
  bytesOnDisk: ['disk_bytes', 'gauge', 'Size of the history on disk, bytes.'],
  segments: ['segments', 'gauge', 'History segments on disk.'],
  bufferedSamples: ['buffered_samples', 'gauge', 'Samples held in memory, not yet flushed.'],
  droppedSamples: ['dropped_samples', 'counter', 'Samples dropped (buffer full or store failing).'],
  recordedSamples: ['recorded_samples', 'counter', 'Samples recorded.'],
  series: ['series', 'gauge', 'Series (device and point) in the history.'],
  flushes: ['flushes', 'counter', 'Flushes of buffered samples to disk.'],
  compactions: ['compactions', 'counter', 'Compactions of history segments.'],
  truncatedBytes: ['truncated_bytes', 'counter', 'Bytes of damaged segment tails cut off at start-up.'],
  writtenBytes: ['written_bytes', 'counter', 'Bytes the history wrote (flushed samples and seals).'],
  unsyncedRanges: ['unsynced_ranges', 'gauge', 'Time ranges written but not yet synced to disk.'],
};

const EVENT_LOOP: StatTable = {
  windowP99Ms: ['delay_window_p99_seconds', 'ms', 'Event-loop delay, 99th percentile over the last window, seconds.'],
  windowMaxMs: ['delay_window_max_seconds', 'ms', 'Event-loop delay, maximum over the last window, seconds.'],
  p99Ms: ['delay_p99_max_seconds', 'ms', 'Event-loop delay, the worst window 99th percentile since start, seconds.'],
  maxMs: ['delay_max_seconds', 'ms', 'Event-loop delay, the largest since start, seconds.'],
};

export const partsCollector: Collector = (sink, { persist, parts }) => {
  fromStats(sink, 'shadowgate_persist', persist, PERSIST);
  sink.gauge('shadowgate_persist_ok', 'Whether the last shadow save succeeded (1) or not (0).')(persist['lastError'] ? 0 : 1);
  const { mqtt, history, eventLoop, modbusServers: _servers, ...others } = parts; // servers: metrics-servers.ts
  if (isRecord(mqtt)) {
    fromStats(sink, 'shadowgate_mqtt_broker', mqtt['broker'], BROKER);
    fromStats(sink, 'shadowgate_mqtt_exporter', mqtt['exporter'], EXPORTER);
    fromStats(sink, 'shadowgate_mqtt_bridge', mqtt['bridge'], BRIDGE);
    const se = mqtt['shadowExport'];
    fromStats(sink, 'shadowgate_shadow_export', se, SHADOW_EXPORT);
    if (isRecord(se)) {
      fromStats(sink, 'shadowgate_shadow_export_http', se['http'], HTTP_TARGET);
      fromStats(sink, 'shadowgate_shadow_export_file', se['file'], FILE_TARGET);
    }
  }
  fromStats(sink, 'shadowgate_history', history, HISTORY);
  fromStats(sink, 'shadowgate_event_loop', eventLoop, EVENT_LOOP);
  // A part not described above still shows, its figures as gauges (metrics-stats.ts).
  for (const [part, stats] of Object.entries(others)) fromStats(sink, `shadowgate_${part.replace(/[^a-zA-Z0-9]/g, '_').toLowerCase()}`, stats, {});
};

const startSeconds = Date.now() / 1000 - process.uptime();

/** The standard process metrics Prometheus dashboards expect (cheap ones only: no GC observers). */
export const processCollector: Collector = (sink) => {
  sink.gauge('process_resident_memory_bytes', 'Resident memory size in bytes.')(process.memoryUsage.rss());
  const cpu = process.cpuUsage();
  sink.counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.')((cpu.user + cpu.system) / 1e6);
  sink.gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.')(startSeconds);
  sink.gauge('nodejs_heap_used_bytes', 'Heap used by V8, bytes.')(process.memoryUsage().heapUsed);
};
