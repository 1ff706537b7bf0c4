// Bus doctor: asks every unit id of a running Modbus bus who is there and what it is, between the bus's polls,
// at the bus's own settings. Progress while it runs; then each unit with its best model and why, and "Add"
// opens the add-device form with bus, unit and model filled in (its test read before saving, as usual).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

const PHASES = { settings: 'Trying line settings', units: 'Looking for units', identity: 'Identifying units', listen: 'Listening to the line' };
const isModbus = (b) => b.driver === 'modbus-rtu' || b.driver === 'modbus-tcp';
const pct = (score) => `${Math.round(score * 100)} %`;

/** The add-device form's address for a unit found, with a device id made from the model and the unit. */
export const addHref = (bus, unit, model) => {
  const q = new URLSearchParams({ bus, unit: String(unit) });
  if (model) q.set('model', model);
  return `#/add?${q}`;
};

function Progress({ job }) {
  const p = job.progress;
  const value = Math.round((p?.done ?? 0) * 100);
  return html`<div class="doctor-progress" role="status">
    <label>${p ? PHASES[p.phase] ?? p.phase : 'Starting'}
      <progress max="100" value=${value}>${value}%</progress> ${value}%</label>
    ${p?.note && html`<p class="hint">${p.note}</p>`}
  </div>`;
}

function Unit({ bus, u }) {
  const [best, ...others] = u.candidates;
  return html`<li class="card doctor-unit" data-unit=${u.unit}>
    <div class="bar"><h3>Unit ${u.unit}</h3>
      <a class="button primary" href=${addHref(bus, u.unit, best?.model)} aria-label=${`Add unit ${u.unit}${best ? ` as ${best.model}` : ''}`}>Add</a></div>
    ${best
      ? html`<p><strong class="model">${best.model}</strong> <span class="badge">${pct(best.score)}</span></p><p class="hint why">${best.why}</p>`
      : html`<p class="hint">No library model fits${u.answers === 'exception' ? ' (it answers with exceptions only)' : ''}: pick one in the form.</p>`}
    ${others.length > 0 && html`<details><summary>Other candidates (${others.length})</summary><ul>
      ${others.map((c) => html`<li key=${c.model}>${c.model} <span class="badge">${pct(c.score)}</span> <span class="hint">${c.why}</span></li>`)}
    </ul></details>`}
  </li>`;
}

function Report({ job }) {
  const r = job.report;
  const line = r.line;
  return html`<div class="doctor-report">
    <p role="status">${r.units.length === 0 ? 'No unit answered.' : `${r.units.length} unit${r.units.length === 1 ? '' : 's'} found`}
      <span class="hint"> in ${(r.elapsed_ms / 1000).toFixed(1)} s, ${r.sent_bytes} bytes sent${line ? ` · ${line.baud_rate} baud, parity ${line.parity}, ${line.stop_bits} stop bit${line.stop_bits === 1 ? '' : 's'}` : ''}</span></p>
    ${r.hints.length > 0 && html`<ul class="hints">${r.hints.map((h) => html`<li>${h}</li>`)}</ul>`}
    <ul class="doctor-units">${r.units.map((u) => html`<${Unit} key=${u.unit} bus=${job.bus} u=${u} />`)}</ul>
  </div>`;
}

export function Doctor({ busId }) {
  const [buses, setBuses] = useState(null);
  const [bus, setBus] = useState(busId ?? '');
  const [range, setRange] = useState({ from: '1', to: '247' });
  const [job, setJob] = useState(null);
  /** Bumped by each run started here: the run is then followed. */
  const [runs, setRuns] = useState(0);
  const [error, setError] = useState('');
  useEffect(() => {
    api('/buses').then((list) => {
      const modbus = list.filter(isModbus);
      setBuses(modbus);
      if (!bus && modbus[0]) setBus(modbus[0].id);
    }, (err) => setError(err.message));
  }, []);
  // The bus's current or last run; followed every second while it runs.
  useEffect(() => {
    if (!bus) return undefined;
    let stop = false;
    let timer;
    const look = async () => {
      try {
        const j = await api(`/buses/${encodeURIComponent(bus)}/doctor`);
        if (stop) return;
        setJob(j);
        if (j?.state === 'running') timer = setTimeout(look, 1000);
      } catch (err) {
        if (!stop) setError(err.message);
      }
    };
    setJob((j) => (j?.bus === bus ? j : null));
    void look();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [bus, runs]);
  const run = async (e) => {
    e.preventDefault();
    setError('');
    try {
      setJob(await api(`/buses/${encodeURIComponent(bus)}/doctor`, { method: 'POST', body: { from: Number(range.from), to: Number(range.to) } }));
      setRuns((n) => n + 1);
    } catch (err) {
      setError(err.message);
    }
  };
  const running = job?.state === 'running';
  const setField = (key) => (e) => setRange({ ...range, [key]: e.currentTarget.value });
  return html`
    <section aria-labelledby="doctor-h">
      <h1 id="doctor-h">Bus doctor</h1>
      <p class="hint">Asks every unit id of a running Modbus bus who is there and which library model it is. Its requests wait their turn between the bus's polls, at the bus's own settings.</p>
      <form class="form" onSubmit=${run}>
        <label>Bus <select value=${bus} onChange=${(e) => setBus(e.currentTarget.value)}>
          ${(buses ?? []).map((b) => html`<option value=${b.id}>${b.id} (${b.driver}${b.running ? '' : ', stopped'})</option>`)}
        </select></label>
        ${buses?.length === 0 && html`<p class="hint">No Modbus bus is configured: <a href="#/bus">add one</a> first.</p>`}
        <fieldset><legend>Unit ids</legend>
          <label>From <input type="number" min="1" max="247" value=${range.from} onInput=${setField('from')} size="4" /></label>
          <label>To <input type="number" min="1" max="247" value=${range.to} onInput=${setField('to')} size="4" /></label>
        </fieldset>
        <div class="actions"><button type="submit" class="primary" disabled=${!bus || running}>${running ? 'Running…' : 'Run the doctor'}</button></div>
      </form>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${running && html`<${Progress} job=${job} />`}
      ${job?.state === 'failed' && html`<p class="error" role="alert">The doctor stopped: ${job.error}</p>`}
      ${job?.report && html`<${Report} job=${job} />`}
    </section>`;
}
