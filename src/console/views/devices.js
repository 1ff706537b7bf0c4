// Devices: every device with its state (the six states), last update, failures, bus and TTL; filter by
// state, search by text; live over the event stream.
import { html } from '../html.js';
import { useState } from 'preact/hooks';
import { useStore } from '../store.js';

export const STATES = ['Online', 'Initializing', 'Checking', 'Refreshing', 'MaybeOffline', 'Offline'];

export function StateBadge({ state }) {
  return html`<span class="badge state-${state}">${state}</span>`;
}

export function Devices() {
  const s = useStore();
  const [text, setText] = useState('');
  const [only, setOnly] = useState('');
  const q = text.trim().toLowerCase();
  const rows = [...s.devices.values()].filter((d) => {
    if (only && d.state !== only) return false;
    if (!q) return true;
    const c = s.config.get(d.id);
    return [d.id, d.model, c?.bus ?? '', c?.description ?? ''].some((t) => t.toLowerCase().includes(q));
  });
  const counts = {};
  for (const d of s.devices.values()) counts[d.state] = (counts[d.state] ?? 0) + 1;
  return html`
    <section aria-labelledby="devices-h">
      <div class="bar">
        <h1 id="devices-h">Devices <small>${s.devices.size}</small></h1>
        <a class="button" href="#/add">Add a device</a>
      </div>
      <div class="filters">
        <label>Search <input type="search" value=${text} onInput=${(e) => setText(e.currentTarget.value)} placeholder="id, model, bus or description" /></label>
        <label>State
          <select value=${only} onChange=${(e) => setOnly(e.currentTarget.value)}>
            <option value="">all</option>
            ${STATES.map((st) => html`<option value=${st}>${st} (${counts[st] ?? 0})</option>`)}
          </select>
        </label>
      </div>
      ${s.error && html`<p class="error" role="alert">${s.error}</p>`}
      ${!s.loaded ? html`<p>Loading…</p>` : rows.length === 0 ? html`<p>No device matches.</p>` : html`
      <div class="scroll">
      <table class="devices">
        <thead><tr><th scope="col">Device</th><th scope="col">State</th><th scope="col">Model</th><th scope="col">Bus</th>
          <th scope="col">Last update</th><th scope="col" class="num">Failures</th><th scope="col">TTL</th></tr></thead>
        <tbody>
          ${rows.map((d) => html`<tr key=${d.id}>
            <td><a href=${`#/device/${encodeURIComponent(d.id)}`}>${d.id}</a>${s.config.get(d.id)?.description ? html`<div class="hint">${s.config.get(d.id).description}</div>` : ''}</td>
            <td><${StateBadge} state=${d.state} /></td>
            <td>${d.model}</td>
            <td>${s.config.get(d.id)?.bus ?? ''}</td>
            <td class="time" data-id=${d.id}>${d.updated_at.startsWith('0001') ? 'never' : d.updated_at}</td>
            <td class="num">${d.disconnect_times}</td>
            <td>${d.ttl}</td>
          </tr>`)}
        </tbody>
      </table></div>`}
    </section>`;
}
