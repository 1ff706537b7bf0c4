// System: version, uptime, clock sync, disk and memory, persistence and history, MQTT clients, the system update,
// backup and restore, the last log lines.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { Lifecycle } from './backup.js';
import { RestartButton } from './restart.js';
import { SystemUpdate } from './update.js';

const mb = (n) => (typeof n === 'number' ? `${(n / 1048576).toFixed(1)} MB` : '—');
const duration = (s) => `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h ${Math.floor((s % 3600) / 60)}m`;

export function System() {
  const [info, setInfo] = useState(null);
  const [logs, setLogs] = useState([]);
  const [error, setError] = useState('');
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const i = await api('/system');
        if (!stop) setInfo(i);
        const l = await api('/system/logs?lines=300');
        if (!stop) setLogs(l);
      } catch (err) {
        if (!stop) setError(err.message);
      }
    };
    void tick();
    const timer = setInterval(tick, 5000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);
  if (!info) return html`<section><h1>System</h1>${error ? html`<p class="error" role="alert">${error}</p>` : html`<p>Loading…</p>`}</section>`;
  const sync = info.clock.synchronized;
  const p = info.persistence ?? {};
  const h = info.history ?? {};
  const broker = info.mqtt?.broker;
  return html`
    <section aria-labelledby="system-h">
      <h1 id="system-h">System</h1>
      <dl class="figures">
        <div><dt>Version</dt><dd>${info.version}</dd></div>
        <div><dt>Uptime</dt><dd>${duration(info.uptime_s)}</dd></div>
        <div><dt>Clock</dt><dd class=${sync === false ? 'warn' : ''}>${sync === null ? 'no time sync service' : sync ? 'synchronized' : 'NOT synchronized'}</dd></div>
        <div><dt>Memory (RSS)</dt><dd>${mb(info.memory.rss)}</dd></div>
        <div><dt>Disk free</dt><dd>${info.disk.free === undefined ? info.disk.error : `${mb(info.disk.free)} of ${mb(info.disk.total)}`}</dd></div>
        <div><dt>Last save</dt><dd class=${p.lastError ? 'warn' : ''}>${p.lastError ? p.lastError : p.lastSaveAt ? new Date(p.lastSaveAt).toLocaleTimeString() : 'none yet'}</dd></div>
        <div><dt>History</dt><dd>${h.enabled === false ? 'off' : h.error ?? `${h.recordedSamples ?? 0} samples, ${mb(h.bytesOnDisk)} on disk`}</dd></div>
        <div><dt>MQTT clients</dt><dd>${broker ? broker.clients : 'MQTT off'}</dd></div>
      </dl>
      ${info.restart && html`<div class="card restart-card">
        ${info.restart.pending.length > 0 ? html`<p class="warn">Applied, waiting for a restart to take effect: ${info.restart.pending.join(', ')}.</p>` : ''}
        <${RestartButton} available=${info.restart.available} label=${info.restart.pending.length > 0 ? 'Restart now' : 'Restart the gateway'} />
      </div>`}
      <${SystemUpdate} />
      <${Lifecycle} />
      <h2>Last log lines</h2>
      <pre class="logs" tabindex="0">${logs.slice().reverse().map((l) => `${l.time ?? ''} ${l.level >= 50 ? 'ERROR' : l.level >= 40 ? 'WARN ' : 'INFO '} ${l.msg ?? ''}${l.err?.message ? ` — ${l.err.message}` : ''}${l.bus ? ` [bus ${l.bus}]` : ''}${l.part ? ` [${l.part}]` : ''}\n`).join('')}</pre>
    </section>`;
}
