// One device: its points with value, unit, quality (fresh / stale / unavailable), update and write times;
// writes through the same pipeline as REST (the read-back or the error shows); a history plot per point;
// edit and remove.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { changed, loadDevices, loadModels, state, useStore } from '../store.js';
import { StateBadge } from './devices.js';
import { HistoryPlot } from './plot.js';

const NEVER = '0001-01-01 00:00:00';

/** Go duration text (5m0s, 1h30m0s, 500ms) → ms. */
export function goDuration(text) {
  let ms = 0;
  for (const [, n, u] of String(text).matchAll(/([\d.]+)(ms|h|m|s)/g)) ms += Number(n) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[u];
  return ms;
}

function quality(device, point) {
  if (point.value === null || point.updated_at === NEVER || device.state === 'Offline') return 'unavailable';
  const age = Date.now() - new Date(point.updated_at.replace(' ', 'T')).getTime();
  return age > goDuration(device.ttl) ? 'stale' : 'fresh';
}

/** Writes one point through REST writePoints (same validation as the API) and reads the device back. */
function useWrite(id, point) {
  const [result, setResult] = useState(null);
  const write = async (v) => {
    setResult({ busy: true });
    try {
      await api('/device/writePoints', { method: 'POST', body: { id, values: [{ name: point, value: v }] } });
      const fresh = await api(`/shadow/device?id=${encodeURIComponent(id)}`);
      state.devices.set(id, fresh);
      changed();
      const back = fresh.points.find((p) => p.name === point);
      setResult({ ok: `written; read back: ${back?.value ?? '—'}` });
    } catch (err) {
      setResult({ error: err.message });
    }
  };
  const shown = html`${result?.ok && html`<span class="ok" role="status">${result.ok}</span>`}
    ${result?.error && html`<span class="error" role="alert">${result.error}</span>`}`;
  return { result, write, shown };
}

function WriteControl({ id, point, type }) {
  const [value, setValue] = useState('');
  const { result, write, shown } = useWrite(id, point);
  const send = (e) => {
    e.preventDefault();
    const text = value.trim();
    void write(type === 'string' || text === '' || Number.isNaN(Number(text)) ? text : Number(text));
  };
  return html`<form class="write" onSubmit=${send}>
    <label class="sr-only" for=${`w-${point}`}>New value for ${point}</label>
    <input id=${`w-${point}`} value=${value} onInput=${(e) => setValue(e.currentTarget.value)} placeholder="value" size="8" />
    <button type="submit" disabled=${result?.busy}>Write</button>
    ${shown}
  </form>`;
}

/** An on/off point: a switch that writes the other state (`states` is [off, on] as the shadow holds them). */
function Toggle({ id, point, states, value }) {
  const { result, write, shown } = useWrite(id, point);
  const on = value !== null && String(value) === String(states[1]);
  const label = (v) => (typeof v === 'string' ? v : v ? 'on' : 'off');
  return html`<div class="write">
    <button type="button" role="switch" class="switch" id=${`w-${point}`} aria-checked=${on ? 'true' : 'false'} aria-label=${`${point}`}
      disabled=${result?.busy} onClick=${() => write(states[on ? 0 : 1])}>${label(on ? states[1] : states[0])}</button>
    ${shown}
  </div>`;
}

export function Device({ id }) {
  const s = useStore();
  const [models, setModels] = useState([]);
  const [plot, setPlot] = useState('');
  const [msg, setMsg] = useState('');
  const plotBox = useRef(null);
  useEffect(() => {
    loadModels().then(setModels, () => {});
  }, []);
  // The plot opens below the points table, a screen or more down on a big meter: bring it into view.
  useEffect(() => {
    if (plot) plotBox.current?.scrollIntoView({ block: 'nearest' });
  }, [plot]);
  const d = s.devices.get(id);
  if (!s.loaded) return html`<p>Loading…</p>`;
  if (!d) return html`<p class="error" role="alert">Unknown device ${id}. <a href="#/">All devices</a></p>`;
  const cfg = s.config.get(id);
  const model = models.find((m) => m.name === cfg?.model);
  const info = (name) => model?.points.find((p) => p.name === name);
  const remove = async () => {
    if (!confirm(`Remove device ${id}? Its shadow, persisted data and history are deleted.`)) return;
    try {
      await api(`/config/device?id=${encodeURIComponent(id)}`, { method: 'DELETE' });
      await loadDevices();
      location.hash = '#/';
    } catch (err) {
      setMsg(err.message);
    }
  };
  return html`
    <section aria-labelledby="device-h">
      <div class="bar">
        <h1 id="device-h">${id} <${StateBadge} state=${d.state} /></h1>
        <span>
          <a class="button" href=${`#/add/${encodeURIComponent(id)}`}>Edit</a>
          <button class="danger" onClick=${remove}>Remove</button>
        </span>
      </div>
      ${cfg?.description && html`<p class="description">${cfg.description}</p>`}
      ${msg && html`<p class="error" role="alert">${msg}</p>`}
      <p class="meta">Model <b>${d.model}</b> · bus <b>${cfg?.bus ?? '?'}</b>${cfg?.unit_id !== undefined ? html` · unit <b>${cfg.unit_id}</b>` : ''}
        · TTL <b>${d.ttl}</b> · failures <b>${d.disconnect_times}</b> · updated <b>${d.updated_at.startsWith('0001') ? 'never' : d.updated_at}</b></p>
      <div class="scroll">
      <table class="points">
        <thead><tr><th scope="col">Point</th><th scope="col" class="num">Value</th><th scope="col">Unit</th><th scope="col">Quality</th>
          <th scope="col">Updated</th><th scope="col">Written</th><th scope="col">Write</th><th scope="col">History</th></tr></thead>
        <tbody>
          ${d.points.map((p) => {
            const m = info(p.name);
            const writable = m && m.access !== 'R';
            const q = quality(d, p);
            return html`<tr key=${p.name}>
              <th scope="row">${p.name}</th>
              <td class="num value" data-point=${p.name}>${p.value === null ? (p.reason ? `— (${p.reason})` : '—') : String(p.value)}</td>
              <td>${m?.unit ?? ''}</td>
              <td><span class=${`badge q-${q}`}>${q}</span></td>
              <td class="time">${p.updated_at.startsWith('0001') ? '' : p.updated_at}</td>
              <td class="time">${p.write_value === null ? '' : `${p.write_value} at ${p.write_time}`}</td>
              <td>${!writable ? '' : m.on_off ? html`<${Toggle} id=${id} point=${p.name} states=${m.on_off} value=${p.value} />`
                : html`<${WriteControl} id=${id} point=${p.name} type=${m.type} />`}</td>
              <td>${typeof p.value === 'number' || m?.type !== 'string'
                ? html`<button class="link" aria-expanded=${plot === p.name} onClick=${() => setPlot(plot === p.name ? '' : p.name)}>${plot === p.name ? 'Hide' : 'Plot'}</button>` : ''}</td>
            </tr>`;
          })}
        </tbody>
      </table></div>
      ${plot && html`<section ref=${plotBox} aria-label=${`history of ${plot}`}><h2>History of ${plot}</h2><${HistoryPlot} device=${id} point=${plot} unit=${info(plot)?.unit} /></section>`}
    </section>`;
}
