/** Public types of the point history store. */
import type { DamageSink } from '../damage.js';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../util/logger.js';
import type { AggFunction, TimedValue } from './buckets.js';

export interface HistoryOptions {
  /** Directory of the segment files (the gateway passes `<data_dir>/history`). */
  dir: string;
  /** history.retention, ms: older samples are invisible at once and their segments deleted. */
  retention: number;
  /** history.max_disk, bytes: oldest segments are deleted first to stay under it. */
  maxDisk: number;
  clock: Clock;
  log: Logger;
  /** Where damaged files go (store/damage.ts); default: torn tails cut and damaged segments removed, logged only. */
  damage?: DamageSink;
  /** How often buffered samples go to disk, ms (default 10 s; 0 = only on flush()/close(), for tests). */
  flushInterval?: number;
  /** Write buffer capacity in samples (default 65,536); when full before a flush completes, samples are dropped and counted. */
  bufferSamples?: number;
  /** Most (device, point) series kept (default 65,536, shadow.max_points' default). */
  maxSeries?: number;
  /** A log is sealed when it reaches this size (default max_disk/32, within 64 KiB..8 MiB). */
  segmentBytes?: number;
  /** A log is sealed when its oldest sample is from an earlier span than now (default 1 day, UTC). */
  segmentSpan?: number;
}

export interface HistoryStats {
  bytesOnDisk: number;
  /** Segment files on disk (sealed + logs). */
  segments: number;
  bufferedSamples: number;
  droppedSamples: number;
  recordedSamples: number;
  series: number;
  flushes: number;
  compactions: number;
  /** Bytes cut from torn log tails when the store was opened. */
  truncatedBytes: number;
  /** Bytes of samples and seals written since the store was opened (flushes' blocks, seals' tails). */
  writtenBytes: number;
  /** Oldest sample time still on disk (ms), null when empty. */
  oldestTs: number | null;
  /** Why the last flush failed (e.g. ENOSPC: samples are dropped and counted meanwhile); null once one succeeds. */
  lastError: string | null;
}

export interface HistoryStore {
  /** Buffers one sample; never throws, never blocks (full buffer or bad input: dropped and counted). */
  record(deviceId: string, point: string, time: number, value: number | string): void;
  /** Writes buffered samples (one append + fdatasync) and enforces retention and the disk cap. */
  flush(): Promise<void>;
  /** Flushes, finishes sealing, stops timers. */
  close(): Promise<void>;
  /** Forgets a device's history at once (queries stop seeing it; space is reclaimed as segments are rewritten or expire). */
  deleteDevice(id: string): Promise<void>;
  stats(): HistoryStats;
  /** Raw samples in [start, endEx), ascending, at most `limit`. */
  readRaw(device: string, point: string, start: number, endEx: number, limit: number): Promise<TimedValue[]>;
  /** Buckets of `interval` ms aligned on the epoch, over numeric samples in [start, endEx). */
  aggregate(device: string, point: string, fn: AggFunction, interval: number, start: number, endEx: number): Promise<TimedValue[]>;
}
