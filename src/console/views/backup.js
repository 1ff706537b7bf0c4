// Backup, restore and factory reset on the System page (docs/deploy.md "Backup, restore and factory reset").
// The download goes through fetch (it needs the token header) and is saved from a blob; a restore sends the
// file itself; both a restore and a reset restart the gateway, and the page waits until it answers again.
import { useEffect, useState } from 'preact/hooks';
import { api, authorizedFetch, unwrap } from '../api.js';
import { html } from '../html.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const startedAt = (info) => Date.now() / 1000 - info.uptime_s;

async function download(history) {
  const res = await authorizedFetch(`/api/v1/system/backup${history ? '?history=true' : ''}`);
  // A refusal is an envelope; the file is gzip.
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) await unwrap(res);
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'shadowgate-backup.tar.gz';
  const url = URL.createObjectURL(await res.blob());
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return name;
}

/** Waits until the gateway answers as a new process (its start time moved on). */
async function backAfterRestart(before) {
  for (let i = 0; i < 90; i++) {
    await sleep(1000);
    const info = await api('/system').catch(() => null);
    if (info && startedAt(info) > before + 1) return true;
  }
  return false;
}

function Status({ st }) {
  if (!st) return null;
  if (st.busy) return html`<p role="status">${st.busy}</p>`;
  if (st.error) return html`<p class="error" role="alert">${st.error}</p>`;
  return html`<p class="ok" role="status">${st.ok}</p>`;
}

export function Lifecycle() {
  const [info, setInfo] = useState(null);
  const [st, setSt] = useState(null);
  const [file, setFile] = useState(null);
  const [typed, setTyped] = useState('');
  useEffect(() => {
    api('/system/lifecycle').then(setInfo, (err) => setSt({ error: err.message }));
  }, []);
  if (!info) return html`<${Status} st=${st} />`;

  const run = async (busy, fn) => {
    setSt({ busy });
    try {
      setSt({ ok: await fn() });
    } catch (err) {
      setSt({ error: err.message });
    }
    // After a restore or reset: the new process's id and outcome.
    api('/system/lifecycle').then(setInfo, () => {});
  };
  // Restore and reset answer, then restart: wait for the new process (`before`: the old one's start).
  const andRestart = async (result, before, done) => {
    if (!result.restarting) return result.message;
    setSt({ busy: `${result.message}… this page carries on when the gateway is back.` });
    return (await backAfterRestart(before)) ? done : 'The gateway is not back after 90 s: see `systemctl status shadowgate` on the device.';
  };
  const restore = () => run('Reading and checking the file…', async () => {
    if (!confirm(`Restore ${file.name}? The configuration, its versions and the history in the file replace this gateway's, and the gateway restarts.`)) return 'Not restored.';
    const before = startedAt(await api('/system'));
    const res = await authorizedFetch('/api/v1/system/restore', { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: file });
    const result = await unwrap(res);
    return andRestart(result, before, `Restored the backup of ${result.gateway_id} made ${new Date(result.created).toLocaleString()}.`);
  });
  const reset = () => run('Resetting…', async () => {
    const before = startedAt(await api('/system'));
    const result = await api('/system/reset', { method: 'POST', body: { confirm: typed } });
    setTyped('');
    return andRestart(result, before, 'Reset: the gateway runs on its configuration file, with no history.');
  });
  const busy = Boolean(st?.busy);
  return html`<div class="card lifecycle" aria-labelledby="lifecycle-h">
    <h2 id="lifecycle-h">Backup, restore and reset</h2>
    <p>A backup holds the configuration, its versions and the API tokens (as hashes: the old token works after a restore), and the history if you ask. It also holds the configuration's other secrets: keep it like a password.</p>
    <p>
      <button type="button" onClick=${() => run('Preparing the backup…', async () => `Saved ${await download(false)}.`)} disabled=${busy}>Download backup</button>
      ${' '}<button type="button" onClick=${() => run('Preparing the backup with history…', async () => `Saved ${await download(true)}.`)} disabled=${busy}>Download backup with history</button>
    </p>
    <p>
      <label>Backup file to restore <input type="file" accept=".gz,application/gzip" onChange=${(e) => setFile(e.currentTarget.files?.[0] ?? null)} /></label>
      ${' '}<button type="button" onClick=${restore} disabled=${busy || !file}>Restore…</button>
    </p>
    <p>
      <label>Factory reset: type this gateway's id <code>${info.gateway_id}</code> to confirm
        ${' '}<input type="text" value=${typed} onInput=${(e) => setTyped(e.currentTarget.value)} autocomplete="off" /></label>
      ${' '}<button type="button" class="danger" onClick=${reset} disabled=${busy || typed !== info.gateway_id}>Reset to the configuration file</button>
    </p>
    <p class="hint">A reset removes the changes made here (and their versions), the shadow and the history; the configuration file and the API token stay.</p>
    ${!info.restart_available && html`<p class="hint">This gateway cannot restart itself: a restore or reset takes effect when it is started again.</p>`}
    ${info.last && html`<p class=${info.last.ok ? 'hint' : 'warn'}>Last ${info.last.action} (${info.last.source}, ${new Date(info.last.at).toLocaleString()}): ${info.last.message}</p>`}
    <${Status} st=${st} />
  </div>`;
}
