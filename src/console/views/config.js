// The whole configuration: view, download (backup), upload (restore) — validated whole, every problem at
// its path, applied without a restart — and the versions kept, with one-click rollback.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { loadDevices } from '../store.js';
import { RestartButton } from './restart.js';

function Outcome({ r }) {
  if (!r) return null;
  if (r.busy) return html`<p role="status">Working…</p>`;
  if (r.error) {
    return html`<div class="error" role="alert"><p>${r.error.split('\n')[0]}</p>
      ${r.errors?.length > 0 && html`<ul class="problems">${r.errors.map((p) => html`<li><code>${p.path}</code> ${p.message}</li>`)}</ul>`}
      <p>Nothing was changed.</p></div>`;
  }
  return html`<div class="ok" role="status"><p>Applied as version ${r.version}.</p>
    ${r.changes.length > 0 && html`<ul>${r.changes.map((c) => html`<li>${c}</li>`)}</ul>`}
    ${r.restartRequired.length > 0 && html`<p class="warn">Needs a restart to take effect: ${r.restartRequired.join(', ')}.</p><${RestartButton} />`}</div>`;
}

export function Config() {
  const [text, setText] = useState('');
  const [versions, setVersions] = useState([]);
  const [result, setResult] = useState(null);
  const load = async () => {
    try {
      setText(JSON.stringify(await api('/config'), null, 2));
      setVersions(await api('/config/versions'));
    } catch (err) {
      setResult({ error: err.message });
    }
  };
  useEffect(() => {
    void load();
  }, []);
  const run = async (work) => {
    setResult({ busy: true });
    try {
      const r = await work();
      setResult(r);
      await Promise.all([load(), loadDevices()]);
    } catch (err) {
      setResult({ error: err.message, errors: err.data?.errors ?? [] });
    }
  };
  const parse = () => {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw Object.assign(new Error(`not valid JSON: ${err.message}`), { data: { errors: [] } });
    }
  };
  const apply = () => run(async () => {
    const raw = parse();
    const check = await api('/config/validate', { method: 'POST', body: raw });
    if (!check.valid) throw Object.assign(new Error(`invalid configuration (${check.errors.length} problems)`), { data: check });
    return api('/config', { method: 'PUT', body: raw });
  });
  const upload = async (e) => {
    const file = e.currentTarget.files?.[0];
    e.currentTarget.value = '';
    if (!file) return;
    setText(await file.text());
    setResult({ error: 'Loaded from the file, not applied yet: check it and press Apply.', errors: [] });
  };
  const download = () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    const a = Object.assign(document.createElement('a'), { href: url, download: `shadowgate-config-${new Date().toISOString().slice(0, 10)}.json` });
    a.click();
    URL.revokeObjectURL(url);
  };
  return html`
    <section aria-labelledby="config-h">
      <h1 id="config-h">Configuration</h1>
      <div class="actions">
        <button onClick=${download}>Download (backup)</button>
        <label class="button">Upload (restore)… <input type="file" accept=".json,application/json" class="sr-only" onChange=${upload} /></label>
        <button class="primary" onClick=${apply}>Validate and apply</button>
      </div>
      <${Outcome} r=${result} />
      <label for="config-text" class="sr-only">Configuration JSON</label>
      <textarea id="config-text" spellcheck="false" value=${text} onInput=${(e) => setText(e.currentTarget.value)}></textarea>
      <h2>Versions</h2>
      ${versions.length === 0 ? html`<p>No change made from here yet.</p>` : html`<div class="scroll"><table>
        <thead><tr><th scope="col" class="num">Version</th><th scope="col">When</th><th scope="col">What</th><th scope="col"></th></tr></thead>
        <tbody>${versions.map((v, i) => html`<tr key=${v.version}><td class="num">${v.version}</td><td class="time">${new Date(v.time).toLocaleString()}</td>
          <td>${v.summary}</td><td>${i === 0 ? 'current' : html`<button onClick=${() => run(() => api('/config/rollback', { method: 'POST', body: { version: v.version } }))}>Roll back to this</button>`}</td></tr>`)}</tbody>
      </table></div>`}
    </section>`;
}
