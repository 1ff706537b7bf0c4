// An edited config file undid changes made in the console (found at the gateway's start): say so on every
// page, list what on request, and offer the way back in one click — or keep the file's (docs/deploy.md).
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { loadDevices } from './store.js';

export function FileDriftBanner() {
  const [drift, setDrift] = useState(null);
  const [problem, setProblem] = useState('');
  useEffect(() => {
    // Health is a read; the list itself needs the write token, so it is fetched only when asked for.
    api('/health/shadow').then((h) => setDrift(h.checks.config_file ?? null), () => {});
  }, []);
  if (!drift) return null;
  const act = async (path) => {
    try {
      await api(path, { method: 'POST' });
      setDrift(null);
      await loadDevices();
    } catch (err) {
      setProblem(err.message);
    }
  };
  const show = async () => {
    try {
      setDrift({ ...drift, entries: (await api('/config/file-drift'))?.entries ?? [] });
    } catch (err) {
      setProblem(err.message);
    }
  };
  return html`<div class="card" role="alert" id="file-drift">
    <p class="warn">${`The configuration file was edited after changes made here: it undid ${drift.undone} ${drift.undone === 1 ? 'change' : 'changes'} of the console's version ${drift.console_version}.`}</p>
    ${drift.entries
      ? html`<ul>${drift.entries.map((e) => html`<li><code>${e.path}</code> ${e.change}</li>`)}</ul>`
      : html`<button type="button" onClick=${show}>Show what</button>`}
    <div class="actions">
      <button type="button" onClick=${() => act('/config/file-drift/console')}>Return to the console's version</button>
      <button type="button" onClick=${() => act('/config/file-drift/file')}>Keep the file's</button>
    </div>
    ${problem && html`<p class="error">${problem}</p>`}
  </div>`;
}
