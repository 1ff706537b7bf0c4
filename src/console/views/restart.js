// The restart button, where a restart is needed: the gateway answers, stops cleanly and its systemd unit
// starts it again (a few seconds); the button then waits until it answers as a new process.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** When the gateway process started, s since the epoch (from its uptime): a restart moves it on. */
const startedAt = (info) => Date.now() / 1000 - info.uptime_s;

export function RestartButton({ available, label = 'Restart now' }) {
  const [can, setCan] = useState(available);
  const [st, setSt] = useState(null);
  useEffect(() => {
    if (available === undefined) api('/system').then((i) => setCan(i.restart?.available ?? false), () => setCan(false));
  }, [available]);
  if (can === undefined) return null;
  if (!can) return html`<p class="hint">This gateway cannot restart itself (it is not run by its systemd unit): restart it the way it was started.</p>`;
  const restart = async () => {
    if (!confirm('Restart the gateway now? Polling, REST and MQTT pause for about ten seconds.')) return;
    setSt({ busy: true });
    try {
      const before = startedAt(await api('/system'));
      await api('/system/restart', { method: 'POST' });
      for (let i = 0; i < 60; i++) {
        await sleep(1000);
        const info = await api('/system').catch(() => null);
        if (info && startedAt(info) > before + 1) {
          setSt({ ok: 'Restarted.' });
          return;
        }
      }
      setSt({ error: 'The gateway is not back after a minute: see `systemctl status shadowgate` on the device.' });
    } catch (err) {
      setSt({ error: err.message });
    }
  };
  return html`<span class="restart">
    <button type="button" class="primary" onClick=${restart} disabled=${st?.busy}>${label}</button>
    ${st?.busy && html` <span role="status">Restarting… this page carries on when the gateway is back.</span>`}
    ${st?.ok && html` <span class="ok" role="status">${st.ok}</span>`}
    ${st?.error && html` <span class="error" role="alert">${st.error}</span>`}
  </span>`;
}
