/** The shapes shared by /metrics and its collectors (metrics.ts renders, metrics-*.ts collect). */
import type { Shadow } from '../core/shadow.js';

export type Labels = Record<string, string>;

/** Sets one sample of a metric (a counter's current total, a gauge's value); non-finite values are left out. */
export type SetSample = (value: number, labels?: Labels) => void;

/** A histogram's state as counted elsewhere: requests per bucket (not cumulative; one more than `bounds`, the last over all), sum, count. */
export interface HistogramState {
  buckets: readonly number[];
  sum: number;
  count: number;
}

/** Sets one label set's histogram. */
export type SetHistogram = (state: HistogramState, labels?: Labels) => void;

/** What a collector writes into: declare a metric once per scrape (again is fine), then set samples. */
export interface MetricSink {
  gauge(name: string, help: string, labelNames?: readonly string[]): SetSample;
  /** A histogram counted by its source (`bounds`: the buckets' upper bounds, ascending, seconds for durations). */
  histogram(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]): SetHistogram;
  /** `name` must end in `_total`: the value is the total since start (Prometheus handles resets). */
  counter(name: string, help: string, labelNames?: readonly string[]): SetSample;
}

/** A configured device as the metrics label it: `unit` is the Modbus unit id (empty for other drivers). */
export interface DeviceLabelSource {
  id: string;
  bus: string;
  unit_id?: number | undefined;
}

export interface MetricsInputs {
  shadow: Shadow;
  persist: Record<string, unknown>;
  /** Each running bus's driver figures by bus id. */
  buses: Record<string, unknown>;
  /** Other parts' figures by part name (mqtt, history, eventLoop). */
  parts: Record<string, Record<string, unknown>>;
  /** The configured devices, for the bus and unit labels of per-device metrics. */
  devices?: readonly DeviceLabelSource[];
  /** Wall clock, ms (the shadow's update times are wall-clock ms); default Date.now. */
  now?: () => number;
}

/** Writes the metrics of one source into the sink; called on every scrape. */
export type Collector = (sink: MetricSink, inputs: MetricsInputs) => void;
