// An edited config file undid changes made in the console (found at the gateway's start): say so on every
// page, list what on request, and offer the way back in one click — or keep the file's (docs/deploy.md).
// Returning replaces the file's version as a whole: what the file changed of its own is named first and
// confirmed, and the file's version stays in the history (Configuration → Versions) to roll back to.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { loadDevices } from './store.js';

const editText = (e) => `${e.path} ${e.change === 'added' ? 'added by the file' : e.change === 'removed' ? 'removed by the file' : 'changed by the file'}`;

export function FileDriftBanner() {
  const [drift, setDrift] = useState(null);
  const [problem, setProblem] = useState('');
  const [confirming, setConfirming] = useState(false);
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
  const details = async () => (await api('/config/file-drift')) ?? { entries: [], lost: [] };
  const show = async () => {
    try {
      const d = await details();
      setDrift({ ...drift, entries: d.entries, lost: d.lost });
    } catch (err) {
      setProblem(err.message);
    }
  };
  const returnToConsole = async () => {
    if (!drift.file_edits) return act('/config/file-drift/console');
    try {
      if (!drift.lost) {
        const d = await details();
        setDrift({ ...drift, entries: d.entries, lost: d.lost });
      }
      setConfirming(true);
    } catch (err) {
      setProblem(err.message);
    }
  };
  return html`<div class="card" role="alert" id="file-drift">
    <p class="warn">${`The configuration file was edited after changes made here: it undid ${drift.undone} ${drift.undone === 1 ? 'change' : 'changes'} of the console's version ${drift.console_version}.`}</p>
    ${drift.entries
      ? html`<ul>${drift.entries.map((e) => html`<li><code>${e.path}</code> ${e.change}</li>`)}</ul>`
      : html`<button type="button" onClick=${show}>Show what</button>`}
    ${confirming
      ? html`<div id="file-drift-confirm">
          <p class="warn">${`Returning to the console's version also discards what the file changed of its own (${drift.lost.length}):`}</p>
          <ul>${drift.lost.map((e) => html`<li><code>${editText(e)}</code></li>`)}</ul>
          <p>${`The file's version stays in the history as version ${drift.file_version} (Configuration → Versions), to roll back to.`}</p>
          <div class="actions">
            <button type="button" onClick=${() => act('/config/file-drift/console')}>Return, discarding the file's edits</button>
            <button type="button" onClick=${() => setConfirming(false)}>Cancel</button>
          </div>
        </div>`
      : html`<div class="actions">
          <button type="button" onClick=${returnToConsole}>Return to the console's version</button>
          <button type="button" onClick=${() => act('/config/file-drift/file')}>Keep the file's</button>
        </div>`}
    ${problem && html`<p class="error">${problem}</p>`}
  </div>`;
}
