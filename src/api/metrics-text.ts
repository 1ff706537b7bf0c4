/**
 * The Prometheus text exposition (format 0.0.4) written straight from the collectors' samples. A prom-client
 * registry built afresh each scrape hashed every label set, then formatted each sample through several arrays
 * and objects: for 1,000 devices that was 10-15 ms of main-thread CPU a scrape on the bench machine (2.4-2.7 ms
 * written here), in one turn of the event loop, and with the collections of its garbage the longest turns
 * fleet F had (scripts/bench/footprint.ts scrapes while it measures). The text is the one prom-client 15 wrote:
 * metrics in declaration order, a label-less gauge or counter present (0) even when never set, a label set set
 * twice kept in its first place (a gauge takes the last value and labels' order, a counter the sum), label
 * values escaped (\\, \n, "), HELP escaped (\\, \n).
 */
import type { HistogramState, Labels, MetricSink, SetHistogram, SetSample } from './metrics-types.js';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

type LabelValue = string | number;
interface Sample {
  /** The sample's name when it is not the family's (a histogram's _bucket, _sum, _count). */
  name: string;
  labels: Readonly<Record<string, LabelValue>>;
  value: number;
}
interface Family {
  name: string;
  help: string;
  type: 'gauge' | 'counter' | 'histogram';
  samples: Sample[];
}

const escapeText = (s: string): string => (s.includes('\\') || s.includes('\n') ? s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : s);
const escapeLabel = (v: LabelValue): LabelValue => (typeof v === 'string' ? escapeText(v).replace(/"/g, '\\"') : v);

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}

/**
 * Label sets formatted before, by object: a collector that hands the same labels object every scrape (a
 * device's) has it formatted once. Label objects are not changed once handed to a sink.
 */
const formatted = new WeakMap<object, string>();

function formatLabels(labels: Readonly<Record<string, LabelValue>>): string {
  const known = formatted.get(labels);
  if (known !== undefined) return known;
  let out = '';
  for (const name in labels) out += `${out ? ',' : ''}${name}="${escapeLabel(labels[name]!)}"`;
  const text = out ? `{${out}}` : '';
  formatted.set(labels, text);
  return text;
}

function checkLabels(metric: string, labelNames: readonly string[], labels: Labels): void {
  for (const key in labels) if (!labelNames.includes(key)) throw new Error(`metric ${metric} has no label ${key}`);
}

/** A sink that keeps every family's samples, and renders them as the exposition text. */
export function textSink(): MetricSink & { render(): string } {
  const families = new Map<string, Family>();
  const setters = new Map<string, SetSample>();
  const histograms = new Map<string, SetHistogram>();

  const family = (name: string, help: string, type: Family['type'], labelNames: readonly string[]): Family => {
    if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${name}`);
    if (!labelNames.every((l) => LABEL_NAME.test(l))) throw new Error(`invalid label name in ${labelNames.join(', ')}`);
    const f: Family = { name, help, type, samples: [] };
    families.set(name, f);
    return f;
  };

  const declare = (type: 'gauge' | 'counter', name: string, help: string, labelNames: readonly string[]): SetSample => {
    const known = setters.get(name);
    if (known) return known;
    if (type === 'counter' && !name.endsWith('_total')) throw new Error(`counter ${name} must end in _total`);
    const f = family(name, help, type, labelNames);
    /** Samples by their label values, for a label set set twice. */
    const byKey = new Map<string, Sample>();
    const key = (labels: Labels): string => {
      let k = '';
      for (const l of labelNames) k += `${labels[l] ?? ''}\u0000`;
      return k;
    };
    const put = (value: number, labels: Labels): void => {
      const k = labelNames.length ? key(labels) : '';
      const s = byKey.get(k);
      if (!s) {
        const sample = { name, labels, value };
        byKey.set(k, sample);
        f.samples.push(sample);
      } else if (type === 'counter') s.value += value;
      else {
        s.value = value;
        s.labels = labels;
      }
    };
    if (labelNames.length === 0) put(0, {});
    const set: SetSample = type === 'gauge'
      ? (value, labels = {}) => {
          checkLabels(name, labelNames, labels);
          if (Number.isFinite(value)) put(value, labels);
        }
      // Each scrape starts from nothing: the one increment is the part's running total.
      : (value, labels = {}) => {
          checkLabels(name, labelNames, labels);
          if (Number.isFinite(value) && value >= 0) put(value, labels);
        };
    setters.set(name, set);
    return set;
  };

  const histogram = (name: string, help: string, labelNames: readonly string[], bounds: readonly number[]): SetHistogram => {
    const known = histograms.get(name);
    if (known) return known;
    const f = family(name, help, 'histogram', labelNames);
    const set: SetHistogram = (state: HistogramState, labels = {}) => {
      checkLabels(name, labelNames, labels);
      let cumulative = 0;
      bounds.forEach((le, i) => {
        cumulative += state.buckets[i] ?? 0;
        f.samples.push({ name: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      f.samples.push({ name: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: state.count });
      f.samples.push({ name: `${name}_sum`, labels, value: state.sum });
      f.samples.push({ name: `${name}_count`, labels, value: state.count });
    };
    histograms.set(name, set);
    return set;
  };

  return {
    histogram,
    gauge: (name, help, labelNames = []) => declare('gauge', name, help, labelNames),
    counter: (name, help, labelNames = []) => declare('counter', name, help, labelNames),
    render() {
      const lines: string[] = [];
      for (const f of families.values()) {
        const name = escapeText(f.name);
        if (lines.length) lines.push('');
        lines.push(`# HELP ${name} ${escapeText(f.help)}`, `# TYPE ${name} ${f.type}`);
        for (const s of f.samples) lines.push(`${s.name}${formatLabels(s.labels)} ${formatValue(s.value)}`);
      }
      lines.push('');
      return lines.join('\n');
    },
  };
}
