// Add (or edit) a device without a restart: pick a bus, scan it for unit ids, pick a model from the
// library (searchable), set unit id, poll and TTL; "Test read" shows the values once; Save applies live.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { loadDevices, loadModels, state } from '../store.js';

/** A value as the probe prints it: with its unit, or the reason it has none. */
function valueText(p) {
  if (p.value === null) return `not available (${p.reason ?? 'no value'})`;
  return p.unit && typeof p.value === 'number' ? `${p.value} ${p.unit}` : String(p.value);
}

/** A new device from the doctor's find: `eastron-sdm630` at unit 3 is `sdm630-3`. */
function prefillDevice({ bus = '', unit = '', model = '' }) {
  const name = model ? model.split('-').slice(1).join('-') || model : 'device';
  return { id: unit ? `${name}-${unit}` : '', bus, model, unit_id: unit === '' ? '' : Number(unit) };
}

/** The test read point by point, as `shadowgate probe` shows it: value with unit, a flag on each implausible one. */
function ProbeTable({ probe }) {
  const s = probe.summary;
  return html`<div class="probe"><h2>Test read</h2>
    <p role="status" class=${s.implausible || s.failed ? 'warn' : 'ok'}>${s.points} points: ${s.ok} ok, ${s.implausible} implausible, ${s.not_available} not available, ${s.failed} failed</p>
    <div class="scroll"><table><tbody>
      ${probe.points.map((p) => html`<tr key=${p.name} class=${p.implausible ? 'implausible' : ''}><th scope="row">${p.name}</th>
        ${p.error !== undefined ? html`<td class="error">${p.error}</td>` : html`
          <td><span class="value" data-point=${p.name}>${valueText(p)}</span>
            ${p.implausible && html`<div class="flag warn">⚠ implausible: ${p.implausible}</div>`}</td>`}
      </tr>`)}
    </tbody></table></div></div>`;
}

/**
 * `prefill` (`#/add?bus=&unit=&model=`, the bus doctor's "Add"): a new device with these, its id made from the
 * model and the unit.
 * @param {{ editId?: string, prefill?: { bus?: string, unit?: string, model?: string } }} props
 */
export function AddDevice({ editId, prefill = {} }) {
  const editing = editId ? state.config.get(editId) : undefined;
  const seed = editing ?? (prefill.bus || prefill.model ? prefillDevice(prefill) : undefined);
  const [buses, setBuses] = useState([]);
  const [models, setModels] = useState([]);
  const [form, setForm] = useState(() => ({
    id: editId ?? seed?.id ?? '', bus: seed?.bus ?? '', model: seed?.model ?? '', unit_id: seed?.unit_id ?? '',
    poll: seed?.poll ?? '5s', ttl: seed?.ttl ?? '', description: seed?.description ?? '',
  }));
  const [search, setSearch] = useState('');
  const [scan, setScan] = useState(null);
  const [probe, setProbe] = useState(null);
  const [result, setResult] = useState(null);
  useEffect(() => {
    api('/buses').then((b) => {
      setBuses(b);
      if (!form.bus && b[0]) setForm((f) => ({ ...f, bus: b[0].id }));
    }, (err) => setResult({ error: err.message }));
    loadModels().then(setModels, (err) => setResult({ error: err.message }));
  }, []);
  const bus = buses.find((b) => b.id === form.bus);
  const modbus = bus && (bus.driver === 'modbus-rtu' || bus.driver === 'modbus-tcp');
  const kind = bus ? (modbus ? 'modbus' : bus.driver === 'gpio' ? 'gpio' : 'sim') : '';
  const q = search.trim().toLowerCase();
  const choices = models.filter((m) => (!kind || m.driver === kind) && (!q || `${m.name} ${m.manufacturer ?? ''} ${m.description ?? ''}`.toLowerCase().includes(q)));
  // The list cuts each line at the column's width: the chosen model's whole description shows below it.
  const chosen = models.find((m) => m.name === form.model);
  const set = (key) => (e) => setForm({ ...form, [key]: e.currentTarget.value });
  const device = () => {
    const d = { id: form.id.trim(), model: form.model, bus: form.bus };
    if (modbus && form.unit_id !== '') d.unit_id = Number(form.unit_id);
    if (String(form.poll).trim()) d.poll = String(form.poll).trim();
    if (String(form.ttl).trim()) d.ttl = String(form.ttl).trim();
    const text = form.description.trim();
    if (text) d.description = text;
    // Keys the form does not show (max_registers, unlock_writes, …) are kept on an edit; a cleared description goes.
    const out = editing ? { ...editing, ...d } : d;
    if (!text) delete out.description;
    return out;
  };
  const problems = (err) => (err.data?.errors ?? []).map((p) => `${p.path}: ${p.message}`);
  const doScan = async () => {
    setScan({ busy: true });
    try {
      const { units } = await api(`/bus/scan?id=${encodeURIComponent(form.bus)}&from=1&to=${Number(scanTo) || 247}`, { method: 'POST' });
      setScan({ units });
      if (units[0] !== undefined && form.unit_id === '') setForm((f) => ({ ...f, unit_id: String(units[0]) }));
    } catch (err) {
      setScan({ error: err.message });
    }
  };
  const [scanTo, setScanTo] = useState('16');
  const doProbe = async () => {
    setProbe({ busy: true });
    try {
      setProbe(await api('/device/testRead', { method: 'POST', body: device() }));
    } catch (err) {
      setProbe({ error: err.message, problems: problems(err) });
    }
  };
  const save = async (e) => {
    e.preventDefault();
    setResult({ busy: true });
    try {
      const d = device();
      const r = await api(`/config/device?id=${encodeURIComponent(d.id)}`, { method: 'PUT', body: d });
      await loadDevices();
      setResult({ ok: `saved (version ${r.version}): ${r.changes.join('; ') || 'no change'}` });
      location.hash = `#/device/${encodeURIComponent(d.id)}`;
    } catch (err) {
      setResult({ error: err.message, problems: problems(err) });
    }
  };
  return html`
    <section aria-labelledby="add-h">
      <h1 id="add-h">${editId ? `Edit ${editId}` : 'Add a device'}</h1>
      <form class="form" onSubmit=${save}>
        <label>Device id <input required value=${form.id} disabled=${!!editId} onInput=${set('id')} placeholder="meter-2" /></label>
        <label>Description <input value=${form.description} onInput=${set('description')} placeholder="where it is, what it measures" /></label>
        <label>Bus <select value=${form.bus} onChange=${set('bus')}>
          ${buses.map((b) => html`<option value=${b.id}>${b.id} (${b.driver})</option>`)}
        </select></label>
        ${modbus && html`<fieldset><legend>Unit id</legend>
          <label>Unit id <input type="number" min="1" max="247" value=${form.unit_id} onInput=${set('unit_id')} /></label>
          <label>Scan ids 1 to <input type="number" min="1" max="247" value=${scanTo} onInput=${(e) => setScanTo(e.currentTarget.value)} size="4" /></label>
          <button type="button" onClick=${doScan} disabled=${scan?.busy}>${scan?.busy ? 'Scanning…' : 'Scan the bus'}</button>
          ${scan?.units && html`<p role="status">${scan.units.length ? html`Found: ${scan.units.map((u) => html`<button type="button" class="chip" onClick=${() => setForm({ ...form, unit_id: String(u) })}>${u}</button>`)}` : 'No unit answered.'}</p>`}
          ${scan?.error && html`<p class="error" role="alert">${scan.error}</p>`}
        </fieldset>`}
        <fieldset><legend>Model</legend>
          <label>Search the library <input type="search" value=${search} onInput=${(e) => setSearch(e.currentTarget.value)} placeholder="sdm120, relay, temperature…" /></label>
          <label>Model <select required value=${form.model} onChange=${set('model')} size="6">
            ${choices.map((m) => html`<option value=${m.name} title=${m.description ?? ''}>${m.name}${m.manufacturer ? ` — ${m.manufacturer}` : ''}${m.description ? `: ${m.description}` : ''}</option>`)}
          </select></label>
          ${chosen?.description && html`<p class="hint model-description">${chosen.description}</p>`}
        </fieldset>
        <label>Poll every <input value=${form.poll} onInput=${set('poll')} placeholder="5s" size="8" /></label>
        <label>TTL (offline after no data for) <input value=${form.ttl} onInput=${set('ttl')} placeholder="default" size="8" /></label>
        <div class="actions">
          <button type="button" onClick=${doProbe} disabled=${!form.model || !form.id || probe?.busy}>${probe?.busy ? 'Reading…' : 'Test read'}</button>
          <button type="submit" class="primary" disabled=${result?.busy}>Save</button>
        </div>
        ${probe?.points && html`<${ProbeTable} probe=${probe} />`}
        ${probe?.error && html`<div class="error" role="alert">${probe.error}<ul>${(probe.problems ?? []).map((p) => html`<li>${p}</li>`)}</ul></div>`}
        ${result?.ok && html`<p class="ok" role="status">${result.ok}</p>`}
        ${result?.error && html`<div class="error" role="alert">${result.error}<ul>${(result.problems ?? []).map((p) => html`<li>${p}</li>`)}</ul></div>`}
      </form>
    </section>`;
}
