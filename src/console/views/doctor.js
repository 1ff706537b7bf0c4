// Bus doctor: asks every unit id of a running Modbus bus who is there and what it is, between the bus's polls,
// at the bus's own settings; or, on an RTU bus when asked, searches the line's settings with the line taken from
// the bus (its polls pause). Progress while it runs; then each unit with its best model and why, and "Add"
// opens the add-device form with bus, unit and model filled in (its test read before saving, as usual). Settings
// found that differ from the bus's (or an echo the bus does not expect) are saved on the bus in one click.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { saveBusWith } from './bus-edit.js';

const PHASES = { settings: 'Trying line settings', units: 'Looking for units', identity: 'Identifying units', listen: 'Listening to the line' };
const isModbus = (b) => b.driver === 'modbus-rtu' || b.driver === 'modbus-tcp';
const pct = (score) => `${Math.round(score * 100)} %`;
/** "19200 8O1" */
const setting = (l) => `${l.baud_rate} 8${l.parity.charAt(0).toUpperCase()}${l.stop_bits}`;
const sameSetting = (a, b) => a.baud_rate === b.baud_rate && a.parity === b.parity && a.stop_bits === b.stop_bits;
const devicesWord = (n) => `${n} device${n === 1 ? '' : 's'}`;

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

/**
 * What the report says the bus should change: the settings the units answered at, an echo the bus does not drop.
 * Each is one click, saved through the config API as the bus form saves (the bus restarts with it).
 */
function Fixes({ job, onSaved }) {
  const [result, setResult] = useState(null);
  const line = job.report.line;
  const own = job.bus_line;
  if (!line || !own) return null;
  const settings = !sameSetting(line, own) && job.report.units.length > 0;
  const echo = line.echo && own.echo === false;
  if (!settings && !echo && !result) return null;
  const save = (changes, what) => async () => {
    setResult({ busy: true });
    try {
      await saveBusWith(job.bus, changes);
      setResult({ ok: `Saved: ${what}. Run the doctor again at these settings, or add the units found.` });
      onSaved();
    } catch (err) {
      setResult({ error: err.message });
    }
  };
  return html`<div class="card doctor-fixes">
    ${settings && html`<p>The units answered at <strong class="found-setting">${setting(line)}</strong>; bus ${job.bus} runs at ${setting(own)}.</p>
      <div class="actions"><button type="button" class="primary" disabled=${result?.busy}
        onClick=${save({ baud_rate: line.baud_rate, parity: line.parity, stop_bits: line.stop_bits, ...(echo ? { echo: true } : {}) }, `bus ${job.bus} runs at ${setting(line)}${echo ? ' with echo on' : ''}`)}>Use these settings for bus ${job.bus}</button></div>`}
    ${echo && !settings && html`<p>The adapter echoes what the gateway sends, and bus ${job.bus} does not expect it.</p>
      <div class="actions"><button type="button" class="primary" disabled=${result?.busy} onClick=${save({ echo: true }, `echo is on for bus ${job.bus}`)}>Turn echo on</button></div>`}
    ${result?.ok && html`<p class="ok" role="status">${result.ok}</p>`}
    ${result?.error && html`<p class="error" role="alert">${result.error}</p>`}
  </div>`;
}

function Report({ job, onSaved }) {
  const r = job.report;
  const line = r.line;
  return html`<div class="doctor-report">
    <p role="status">${r.units.length === 0 ? 'No unit answered.' : `${r.units.length} unit${r.units.length === 1 ? '' : 's'} found`}
      <span class="hint"> in ${(r.elapsed_ms / 1000).toFixed(1)} s, ${r.sent_bytes} bytes sent${line ? ` · ${line.baud_rate} baud, parity ${line.parity}, ${line.stop_bits} stop bit${line.stop_bits === 1 ? '' : 's'}` : ''}</span></p>
    ${r.hints.length > 0 && html`<ul class="hints">${r.hints.map((h) => html`<li>${h}</li>`)}</ul>`}
    <${Fixes} key=${job.id} job=${job} onSaved=${onSaved} />
    <ul class="doctor-units">${r.units.map((u) => html`<${Unit} key=${u.unit} bus=${job.bus} u=${u} />`)}</ul>
  </div>`;
}

export function Doctor({ busId }) {
  const [buses, setBuses] = useState(null);
  const [bus, setBus] = useState(busId ?? '');
  const [range, setRange] = useState({ from: '1', to: '247' });
  /** Search the line's settings (RTU only): the line is taken from the bus for the run. */
  const [search, setSearch] = useState(false);
  const [devices, setDevices] = useState([]);
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
    api('/devices').then(setDevices, () => {});
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
      const body = { from: Number(range.from), to: Number(range.to), ...(search && isRtu ? { baud: 'auto', parity: 'auto', stop_bits: 'auto' } : {}) };
      setJob(await api(`/buses/${encodeURIComponent(bus)}/doctor`, { method: 'POST', body }));
      setRuns((n) => n + 1);
    } catch (err) {
      setError(err.message);
    }
  };
  const running = job?.state === 'running';
  const isRtu = buses?.find((b) => b.id === bus)?.driver === 'modbus-rtu';
  const onBus = devices.filter((d) => d.bus === bus).length;
  const pause = `${onBus > 0 ? `Polls of the ${devicesWord(onBus)} on this bus pause` : 'The bus stops'} for about a minute: the doctor takes the line from the bus, tries each common setting, and gives it back at the bus's own settings.`;
  const setField = (key) => (e) => setRange({ ...range, [key]: e.currentTarget.value });
  return html`
    <section aria-labelledby="doctor-h">
      <h1 id="doctor-h">Bus doctor</h1>
      <p class="hint">Asks every unit id of a running Modbus bus who is there and which library model it is. Its requests wait their turn between the bus's polls, at the bus's own settings; on an RS-485 bus it can also search the line's settings.</p>
      <form class="form" onSubmit=${run}>
        <label>Bus <select value=${bus} onChange=${(e) => setBus(e.currentTarget.value)}>
          ${(buses ?? []).map((b) => html`<option value=${b.id}>${b.id} (${b.driver}${b.running ? '' : ', stopped'})</option>`)}
        </select></label>
        ${buses?.length === 0 && html`<p class="hint">No Modbus bus is configured: <a href="#/bus">add one</a> first.</p>`}
        <fieldset><legend>Unit ids</legend>
          <label>From <input type="number" min="1" max="247" value=${range.from} onInput=${setField('from')} size="4" /></label>
          <label>To <input type="number" min="1" max="247" value=${range.to} onInput=${setField('to')} size="4" /></label>
        </fieldset>
        ${isRtu && html`<fieldset><legend>Line settings</legend>
          <label><input type="radio" name="settings" checked=${!search} onChange=${() => setSearch(false)} /> The bus's own, between its polls</label>
          <label><input type="radio" name="settings" checked=${search} onChange=${() => setSearch(true)} /> Search the line's settings</label>
          ${search && html`<p class="hint warn">${pause}</p>`}
        </fieldset>`}
        <div class="actions"><button type="submit" class="primary" disabled=${!bus || running}>${running ? 'Running…' : 'Run the doctor'}</button></div>
      </form>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${running && job.takes_line && html`<p class="hint warn" role="note">The doctor has the line of bus ${job.bus}: its devices are not polled until it ends.</p>`}
      ${running && html`<${Progress} job=${job} />`}
      ${job?.state === 'failed' && html`<p class="error" role="alert">The doctor stopped: ${job.error}</p>`}
      ${job?.report && html`<${Report} job=${job} onSaved=${() => setRuns((n) => n + 1)} />`}
    </section>`;
}
