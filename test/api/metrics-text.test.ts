/**
 * The exposition text written from a sink, byte for byte: what Prometheus (and dashboards built on the
 * prom-client text the gateway wrote before) read. metrics.test.ts checks a real scrape with promtool.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { textSink } from '../../src/api/metrics-text.js';

test('HELP, TYPE and samples of each metric in declaration order, a blank line between metrics', () => {
  const sink = textSink();
  const up = sink.gauge('x_up', 'Whether it is up.', ['device', 'bus']);
  up(1, { device: 'a', bus: 'sim' });
  up(0.5, { device: 'b', bus: 'sim' });
  sink.counter('x_requests_total', 'Requests.')(12);
  assert.is(sink.render(), [
    '# HELP x_up Whether it is up.',
    '# TYPE x_up gauge',
    'x_up{device="a",bus="sim"} 1',
    'x_up{device="b",bus="sim"} 0.5',
    '',
    '# HELP x_requests_total Requests.',
    '# TYPE x_requests_total counter',
    'x_requests_total 12',
    '',
  ].join('\n'));
});

test('a metric without labels shows 0 until set; non-finite and negative counter values are left out', () => {
  const sink = textSink();
  sink.gauge('x_never', 'Never set.');
  sink.gauge('x_nan', 'NaN given.')(NaN);
  sink.counter('x_neg_total', 'Negative given.')(-1);
  const labelled = sink.gauge('x_labelled', 'Only an infinite value.', ['k']);
  labelled(Infinity, { k: 'a' });
  assert.is(sink.render(), '# HELP x_never Never set.\n# TYPE x_never gauge\nx_never 0\n\n' +
    '# HELP x_nan NaN given.\n# TYPE x_nan gauge\nx_nan 0\n\n' +
    '# HELP x_neg_total Negative given.\n# TYPE x_neg_total counter\nx_neg_total 0\n\n' +
    '# HELP x_labelled Only an infinite value.\n# TYPE x_labelled gauge\n');
});

test('a label set given twice keeps its first place: a gauge its last value, a counter the sum', () => {
  const sink = textSink();
  const g = sink.gauge('x_g', 'g', ['k']);
  g(1, { k: 'a' });
  g(2, { k: 'b' });
  g(3, { k: 'a' });
  const c = sink.counter('x_c_total', 'c', ['k']);
  c(1, { k: 'a' });
  c(2, { k: 'a' });
  // Declaring again (as a second collector would) hands back the same metric.
  sink.counter('x_c_total', 'c', ['k'])(4, { k: 'a' });
  const text = sink.render();
  assert.match(text, /^x_g\{k="a"\} 3\nx_g\{k="b"\} 2$/m);
  assert.match(text, /^x_c_total\{k="a"\} 7$/m);
});

test('label values and HELP are escaped; a histogram is cumulative with +Inf, _sum and _count', () => {
  const sink = textSink();
  sink.gauge('x_odd', 'Back\\slash and\nnewline.', ['v'])(1, { v: 'a"b\\c\nd' });
  sink.histogram('x_seconds', 'Latency.', ['client'], [0.01, 0.1])({ buckets: [2, 3, 1], sum: 0.25, count: 6 }, { client: 'c1' });
  assert.is(sink.render(), [
    '# HELP x_odd Back\\\\slash and\\nnewline.',
    '# TYPE x_odd gauge',
    'x_odd{v="a\\"b\\\\c\\nd"} 1',
    '',
    '# HELP x_seconds Latency.',
    '# TYPE x_seconds histogram',
    'x_seconds_bucket{client="c1",le="0.01"} 2',
    'x_seconds_bucket{client="c1",le="0.1"} 5',
    'x_seconds_bucket{client="c1",le="+Inf"} 6',
    'x_seconds_sum{client="c1"} 0.25',
    'x_seconds_count{client="c1"} 6',
    '',
  ].join('\n'));
});

test('a labels object handed again is written the same (its text is kept), and unknown labels or names are refused', () => {
  const sink = textSink();
  const labels = { device: 'dev-1', bus: 'sim' };
  sink.gauge('x_a', 'a', ['device', 'bus'])(1, labels);
  sink.gauge('x_b', 'b', ['device', 'bus'])(2, labels);
  const text = sink.render();
  assert.match(text, /^x_a\{device="dev-1",bus="sim"\} 1$/m);
  assert.match(text, /^x_b\{device="dev-1",bus="sim"\} 2$/m);
  assert.throws(() => sink.gauge('x_c', 'c', ['device'])(1, { device: 'd', bus: 'sim' }), /no label bus/);
  assert.throws(() => sink.gauge('x-bad', 'bad'), /invalid metric name/);
  assert.throws(() => sink.counter('x_count', 'a counter without _total'), /must end in _total/);
});

test.run();
