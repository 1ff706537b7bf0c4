// A point's history as a uPlot chart: a range (1 h, 24 h, 7 d or custom), raw samples or an aggregate per
// interval; drag across the plot to zoom, double-click to zoom out.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api } from '../api.js';
import { html } from '../html.js';

const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };
const STEP = { '1h': '1m', '24h': '15m', '7d': '1h' };
const FUNCTIONS = ['avg', 'min', 'max', 'sum', 'count', 'first', 'last'];

const localInput = (ms) => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
};

export function HistoryPlot({ device, point, unit }) {
  const box = useRef(null);
  const chart = useRef(null);
  const [range, setRange] = useState('1h');
  const [mode, setMode] = useState('raw');
  const [fn, setFn] = useState('avg');
  const [from, setFrom] = useState(localInput(Date.now() - 3_600_000));
  const [to, setTo] = useState(localInput(Date.now()));
  const [info, setInfo] = useState('');

  useEffect(() => {
    let cancelled = false;
    const end = range === 'custom' ? new Date(to).getTime() : Date.now();
    const start = range === 'custom' ? new Date(from).getTime() : end - RANGES[range];
    const q = `device=${encodeURIComponent(device)}&point=${encodeURIComponent(point)}&start=${start}&end=${end}`;
    const span = end - start;
    const interval = range === 'custom' ? (span <= 7_200_000 ? '1m' : span <= 172_800_000 ? '15m' : '1h') : STEP[range];
    const path = mode === 'raw' ? `/history?${q}` : `/history/aggregate?${q}&function=${fn}&interval=${interval}`;
    setInfo('loading…');
    api(path).then((rows) => {
      if (cancelled || !box.current) return;
      const xs = rows.map((r) => r.ts / 1000);
      const ys = rows.map((r) => (typeof r.value === 'number' ? r.value : null));
      setInfo(rows.length === 0 ? 'no samples in this range' : `${rows.length} ${mode === 'raw' ? 'samples' : `${fn} per ${interval}`}`);
      chart.current?.destroy();
      const width = Math.max(280, box.current.clientWidth);
      chart.current = new uPlot({
        width, height: 260,
        scales: { x: { time: true, min: start / 1000, max: end / 1000 } },
        series: [{}, { label: `${point}${unit ? ` (${unit})` : ''}`, stroke: '#1769aa', width: 2, fill: 'rgba(23,105,170,0.08)', spanGaps: false }],
        axes: [{}, { label: unit ?? '' }],
        cursor: { drag: { x: true, y: false } },
      }, [xs, ys], box.current);
    }, (err) => !cancelled && setInfo(err.message));
    return () => {
      cancelled = true;
    };
  }, [device, point, range, mode, fn, from, to]);
  useEffect(() => () => chart.current?.destroy(), []);

  return html`
    <div class="plot">
      <div class="filters">
        <label>Range <select value=${range} onChange=${(e) => setRange(e.currentTarget.value)}>
          <option value="1h">last hour</option><option value="24h">last 24 h</option><option value="7d">last 7 days</option><option value="custom">custom</option>
        </select></label>
        ${range === 'custom' && html`
          <label>From <input type="datetime-local" value=${from} onChange=${(e) => setFrom(e.currentTarget.value)} /></label>
          <label>To <input type="datetime-local" value=${to} onChange=${(e) => setTo(e.currentTarget.value)} /></label>`}
        <label>Show <select value=${mode} onChange=${(e) => setMode(e.currentTarget.value)}>
          <option value="raw">raw samples</option><option value="agg">aggregate</option>
        </select></label>
        ${mode === 'agg' && html`<label>Function <select value=${fn} onChange=${(e) => setFn(e.currentTarget.value)}>
          ${FUNCTIONS.map((f) => html`<option value=${f}>${f}</option>`)}</select></label>`}
      </div>
      <div ref=${box} class="chart" role="img" aria-label=${`history of ${point}`}></div>
      <p class="hint">${info} · drag to zoom, double-click to reset</p>
    </div>`;
}
