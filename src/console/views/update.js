// A/B system update on the System page (docs/deploy.md "Updating"): the bundle is sent with XMLHttpRequest,
// whose upload events give the percentage sent (fetch has none), then GET /system/update is read every 2 s
// while the system's update service checks and installs it; the last outcome (a failed or refused update
// with its reason) stays shown.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, token, tokenAfter401 } from '../api.js';
import { html } from '../html.js';

const BUSY = ['checking', 'installing', 'rebooting'];
const POLL_MS = 2000;
const mb = (n) => `${(n / 1048576).toFixed(1)} MB`;

/** POSTs the file; `onProgress(sent, total)` while it goes; resolves with the envelope's data. A 401 asks for a token once. */
function send(file, onProgress) {
  const once = () => new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/v1/system/update');
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    if (token()) xhr.setRequestHeader('authorization', `Bearer ${token()}`);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      let env = null;
      try {
        env = JSON.parse(xhr.responseText);
      } catch {
        /* not an envelope */
      }
      if (env?.success) resolve(env.data);
      else reject(Object.assign(new ApiError(env?.errorMsg || `upload failed (${xhr.status})`), { status: xhr.status }));
    };
    xhr.onerror = () => reject(new ApiError('the upload was cut off (connection lost)'));
    xhr.send(file);
  });
  return once().catch(async (err) => {
    if (err.status === 401 && (await tokenAfter401(err.message))) return once();
    throw err;
  });
}

function Bar({ label, value }) {
  return html`<p class="update-bar"><label>${label} <progress max="100" value=${value}>${value}%</progress> ${value}%</label></p>`;
}

function StatusLine({ st }) {
  if (!st) return null;
  const failed = st.state === 'failed' || st.state === 'refused' || st.state === 'unknown';
  const when = st.updated_at ? ` (${new Date(st.updated_at).toLocaleString()})` : '';
  return html`<p class=${failed ? 'error' : st.state === 'good' ? 'ok' : ''} role=${failed ? 'alert' : 'status'}>
    <strong>${st.state === 'idle' ? 'No update yet' : `Update ${st.state}`}</strong>${st.message ? `: ${st.message}` : ''}${BUSY.includes(st.state) ? '' : when}
  </p>`;
}

const OVER = ['good', 'failed', 'refused'];

export function SystemUpdate() {
  const [st, setSt] = useState(null);
  const [error, setError] = useState('');
  const [away, setAway] = useState(false);
  const [file, setFile] = useState(null);
  const [sent, setSent] = useState(null);
  // Following an install started here: on through `rebooting` (the gateway is away) until it is over.
  const following = useRef(false);
  const polling = useRef(false);
  const alive = useRef(true);
  const load = () => api('/system/update').then((s) => {
    setSt(s);
    setError('');
    setAway(false);
    return s;
  }, (err) => {
    if (following.current) setAway(true);
    else setError(err.message);
    return undefined;
  });
  // Read every 2 s while an update is under way (also after a reload in the middle of one), else once.
  const poll = () => {
    if (polling.current) return;
    polling.current = true;
    const tick = async () => {
      const s = await load();
      const going = following.current ? !OVER.includes(s?.state) : BUSY.includes(s?.state) || s?.request_pending;
      if (alive.current && going) setTimeout(tick, POLL_MS);
      else polling.current = false;
    };
    void tick();
  };
  useEffect(() => {
    poll();
    return () => {
      alive.current = false;
    };
  }, []);

  const install = async () => {
    if (!confirm(`Install ${file.name} (${mb(file.size)})? The system installs it beside the running one and reboots into it; the gateway is away for a minute or two.`)) return;
    setError('');
    setSent(0);
    try {
      setSt(await send(file, (loaded, total) => setSent(Math.floor((100 * loaded) / Math.max(1, total)))));
      following.current = true;
      poll();
    } catch (err) {
      setError(err.message);
    } finally {
      setSent(null);
    }
  };

  if (!st) return html`<div class="card"><h2>System update</h2>${error ? html`<p class="error" role="alert">${error}</p>` : html`<p>Loading…</p>`}</div>`;
  const busy = sent !== null || BUSY.includes(st.state) || st.request_pending;
  return html`<div class="card system-update" aria-labelledby="update-h">
    <h2 id="update-h">System update</h2>
    <dl class="figures">
      <div><dt>Running version</dt><dd>${st.running_version}</dd></div>
      ${st.booted_slot && html`<div><dt>Slot</dt><dd>${st.booted_slot}</dd></div>`}
    </dl>
    ${st.available
      ? html`<p>
          <label>Update bundle (.raucb) <input type="file" accept=".raucb" onChange=${(e) => setFile(e.currentTarget.files?.[0] ?? null)} /></label>
          ${' '}<button type="button" onClick=${install} disabled=${busy || !file}>Install update…</button>
        </p>`
      : html`<p class="hint">A/B system updates come with the shadowgate SD image; this gateway was installed otherwise (install.sh): update it by running a newer install.sh.</p>`}
    ${sent !== null && html`<${Bar} label="Uploading" value=${sent} />`}
    ${st.state === 'installing' && st.progress !== null && html`<${Bar} label="Installing" value=${st.progress} />`}
    <${StatusLine} st=${st} />
    ${away && html`<p role="status">The gateway does not answer: it is rebooting into the new version. This page carries on when it is back.</p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </div>`;
}
