// Add or edit a bus (port, baud, parity, echo; host and port for Modbus TCP), with the serial ports present on
// the board offered; save applies live and restarts that bus only.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

const FIELDS = {
  'modbus-rtu': ['port', 'baud_rate', 'parity', 'data_bits', 'stop_bits', 'echo', 'timeout'],
  'modbus-tcp': ['host', 'port', 'timeout'],
  gpio: [],
  simulator: [],
};
const NUMERIC = new Set(['baud_rate', 'data_bits', 'stop_bits']);
/** The form's text of the bus option `echo` as the config writes it. */
const echoValue = (v) => (v === 'auto' ? 'auto' : v === 'true');

/**
 * Saves bus `id` as written with `changes` on top (the keys the form does not show stay as they are), as the
 * form's Save does; resolves with the config API's answer ({ version, changes }).
 */
export async function saveBusWith(id, changes) {
  const list = await api('/buses');
  const current = list.find((b) => b.id === id);
  if (!current) throw new Error(`unknown bus ${id}`);
  const { running, error, stats, ...cfg } = current;
  return api(`/config/bus?id=${encodeURIComponent(id)}`, { method: 'PUT', body: { ...cfg, ...changes } });
}

export function BusEdit({ editId }) {
  const [ports, setPorts] = useState([]);
  const [form, setForm] = useState({ id: editId ?? '', driver: 'modbus-rtu', port: '', baud_rate: '9600', parity: 'none', data_bits: '8', stop_bits: '1', echo: 'false', timeout: '300ms', host: '' });
  const [original, setOriginal] = useState(null);
  const [result, setResult] = useState(null);
  useEffect(() => {
    api('/buses/ports').then(setPorts, () => {});
    if (!editId) return;
    api('/buses').then((list) => {
      const b = list.find((x) => x.id === editId);
      if (!b) return setResult({ error: `unknown bus ${editId}` });
      const { running, error, stats, ...cfg } = b;
      setOriginal(cfg);
      setForm((f) => ({ ...f, ...Object.fromEntries(Object.entries(cfg).map(([k, v]) => [k, String(v)])) }));
    }, (err) => setResult({ error: err.message }));
  }, [editId]);
  const set = (key) => (e) => setForm({ ...form, [key]: e.currentTarget.value });
  const body = () => {
    const b = { id: form.id.trim(), driver: form.driver };
    for (const k of FIELDS[form.driver]) {
      const v = String(form[k] ?? '').trim();
      if (v === '') continue;
      if (k === 'echo') {
        // Off is the default: a bus written without it stays so.
        if (v !== 'false' || original?.echo !== undefined) b.echo = echoValue(v);
        continue;
      }
      b[k] = NUMERIC.has(k) || (k === 'port' && form.driver === 'modbus-tcp') ? Number(v) : v;
    }
    // Keys the form does not show (retries, max_registers, …) stay as written; a changed driver drops the old one's.
    const kept = original && original.driver === form.driver ? Object.fromEntries(Object.entries(original).filter(([k]) => !FIELDS[form.driver].includes(k))) : {};
    return { ...kept, ...b };
  };
  const save = async (e) => {
    e.preventDefault();
    setResult({ busy: true });
    try {
      const r = await api(`/config/bus?id=${encodeURIComponent(form.id.trim())}`, { method: 'PUT', body: body() });
      setResult({ ok: `saved (version ${r.version}): ${r.changes.join('; ') || 'no change'}` });
    } catch (err) {
      setResult({ error: err.message, problems: (err.data?.errors ?? []).map((p) => `${p.path}: ${p.message}`) });
    }
  };
  const remove = async () => {
    if (!confirm(`Remove bus ${editId}?`)) return;
    try {
      await api(`/config/bus?id=${encodeURIComponent(editId)}`, { method: 'DELETE' });
      location.hash = '#/buses';
    } catch (err) {
      setResult({ error: err.message });
    }
  };
  const show = (k) => FIELDS[form.driver].includes(k);
  return html`
    <section aria-labelledby="bus-h">
      <h1 id="bus-h">${editId ? `Edit bus ${editId}` : 'Add a bus'}</h1>
      <form class="form" onSubmit=${save}>
        <label>Bus id <input required value=${form.id} disabled=${!!editId} onInput=${set('id')} placeholder="rs485" /></label>
        <label>Driver <select value=${form.driver} onChange=${set('driver')}>
          ${Object.keys(FIELDS).map((d) => html`<option value=${d}>${d}</option>`)}</select></label>
        ${show('port') && form.driver === 'modbus-rtu' && html`<label>Serial port
          <input list="ports" value=${form.port} onInput=${set('port')} placeholder="/dev/ttyUSB0" />
          <datalist id="ports">${ports.map((p) => html`<option value=${p.path}>${p.manufacturer ?? ''}</option>`)}</datalist></label>
          <p class="hint">${ports.length ? `Present: ${ports.map((p) => p.path).join(', ')}` : 'No serial port found on this board.'}</p>`}
        ${show('baud_rate') && html`<label>Baud rate <select value=${form.baud_rate} onChange=${set('baud_rate')}>
          ${['1200', '2400', '4800', '9600', '19200', '38400', '57600', '115200'].map((b) => html`<option value=${b}>${b}</option>`)}</select></label>`}
        ${show('parity') && html`<label>Parity <select value=${form.parity} onChange=${set('parity')}>
          ${['none', 'even', 'odd'].map((p) => html`<option value=${p}>${p}</option>`)}</select></label>`}
        ${show('data_bits') && html`<label>Data bits <select value=${form.data_bits} onChange=${set('data_bits')}><option>8</option><option>7</option></select></label>`}
        ${show('stop_bits') && html`<label>Stop bits <select value=${form.stop_bits} onChange=${set('stop_bits')}><option>1</option><option>2</option></select></label>`}
        ${show('echo') && html`<label>Echo <select value=${form.echo} onChange=${set('echo')}>
          <option value="false">off: the adapter does not echo</option><option value="true">on: drop our own bytes</option><option value="auto">auto: on when an echo is seen</option></select></label>
          <p class="hint">An RS-485 adapter without echo suppression hands back what the gateway sends; the bus doctor says so.</p>`}
        ${show('host') && html`<label>Host <input value=${form.host} onInput=${set('host')} placeholder="192.168.1.50" /></label>`}
        ${show('port') && form.driver === 'modbus-tcp' && html`<label>TCP port <input type="number" value=${form.port} onInput=${set('port')} placeholder="502" /></label>`}
        ${show('timeout') && html`<label>Timeout <input value=${form.timeout} onInput=${set('timeout')} size="8" /></label>`}
        <div class="actions">
          <button type="submit" class="primary" disabled=${result?.busy}>Save</button>
          ${editId && html`<button type="button" class="danger" onClick=${remove}>Remove</button>`}
        </div>
        ${result?.ok && html`<p class="ok" role="status">${result.ok}</p>`}
        ${result?.error && html`<div class="error" role="alert">${result.error}<ul>${(result.problems ?? []).map((p) => html`<li>${p}</li>`)}</ul></div>`}
      </form>
    </section>`;
}
