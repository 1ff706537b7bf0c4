/**
 * Point history: append-only segment files with rollups, retention and a disk cap (docs/history.md).
 * The gateway opens it with openHistory(), wires it with attachHistory(), and the REST layer mounts
 * historyQuery()/historyAggregate() as GET /api/v1/history and /api/v1/history/aggregate.
 */
export { openHistory } from './history/store.js';
export { attachHistory } from './history/attach.js';
export { historyAggregate, historyQuery, MAX_BUCKETS, MAX_LIMIT } from './history/query.js';
export type { HistoryParams, HistoryRow, KnownPoint } from './history/query.js';
export type { HistoryOptions, HistoryStats, HistoryStore } from './history/types.js';
export { AGG_FUNCTIONS } from './history/buckets.js';
export type { AggFunction, TimedValue } from './history/buckets.js';
export { formatLocalMs, parseTimeText } from './history/time-text.js';
