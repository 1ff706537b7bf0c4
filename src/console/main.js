// The console shell: navigation, hash routes, the live link, the token prompt.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { TokenPrompt } from './auth.js';
import { FileDriftBanner } from './file-drift.js';
import { html } from './html.js';
import { loadDevices, startLive, useStore } from './store.js';
import { AddDevice } from './views/add-device.js';
import { BusEdit } from './views/bus-edit.js';
import { Buses } from './views/buses.js';
import { Config } from './views/config.js';
import { Device } from './views/device.js';
import { Devices } from './views/devices.js';
import { Doctor } from './views/doctor.js';
import { HomeAssistant } from './views/homeassistant.js';
import { System } from './views/system.js';

/** `#/add/x?bus=b` → ['add', 'x'] and the query (the doctor's "Add" fills the form from it). */
const route = () => {
  const [path, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = /** @type {string[] & { query: URLSearchParams }} */ (path.split('/').map(decodeURIComponent));
  parts.query = new URLSearchParams(query);
  return parts;
};

function View({ parts }) {
  const [page, arg] = parts;
  switch (page) {
    case 'device': return html`<${Device} id=${arg} />`;
    case 'add': return html`<${AddDevice} key=${`${arg ?? 'new'}?${parts.query}`} editId=${arg} prefill=${Object.fromEntries(parts.query)} />`;
    case 'doctor': return html`<${Doctor} key=${arg ?? ''} busId=${arg} />`;
    case 'buses': return html`<${Buses} />`;
    case 'bus': return html`<${BusEdit} key=${arg ?? 'new'} editId=${arg} />`;
    case 'config': return html`<${Config} />`;
    case 'system': return html`<${System} />`;
    case 'homeassistant': return html`<${HomeAssistant} />`;
    default: return html`<${Devices} />`;
  }
}

const NAV = [['', 'Devices'], ['buses', 'Buses'], ['doctor', 'Bus doctor'], ['add', 'Add device'], ['config', 'Configuration'], ['homeassistant', 'Home Assistant'], ['system', 'System']];

function App() {
  const s = useStore();
  const [parts, setParts] = useState(route());
  useEffect(() => {
    const on = () => {
      setParts(route());
      document.getElementById('main')?.focus();
    };
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  const current = parts[0] === 'device' ? '' : parts[0] ?? '';
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
    <header>
      <a class="brand" href="#/">shadowgate</a>
      <nav aria-label="Sections"><ul>
        ${NAV.map(([path, label]) => html`<li><a href=${`#/${path}`} aria-current=${current === path ? 'page' : undefined}>${label}</a></li>`)}
      </ul></nav>
      <span class=${`live ${s.live ? 'on' : 'off'}`} role="status" title="live updates">${s.live ? 'live' : 'reconnecting…'}</span>
    </header>
    <main id="main" tabindex="-1"><${FileDriftBanner} /><${View} parts=${parts} /></main>
    <${TokenPrompt} />`;
}

render(html`<${App} />`, document.getElementById('app'));
void loadDevices().then(startLive);
