// Buses: per bus its request rate, timeouts, CRC errors, round-trip time, queue depth, and each device's
// poll cycle against its interval — the figures /metrics has, shown so a wiring or baud problem is obvious.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { ModbusServers } from './modbus-servers.js';

const num = (v, digits = 0) => (typeof v === 'number' ? v.toFixed(digits) : '—');

/** The bus-wide counters whichever driver it is (Modbus: stats.bus; the simulator: flat counters). */
function totals(stats) {
  if (!stats) return {};
  const b = stats.bus ?? stats;
  return {
    requests: b.requests ?? b.reads ?? 0,
    timeouts: b.timeouts ?? b.failures ?? 0,
    crc: b.crcErrors ?? 0,
    exceptions: b.exceptions ?? 0,
    rtt: b.lastRttMs,
    queue: b.queueDepth,
    scanProbes: b.scanProbes,
    scanUnanswered: b.scanUnanswered,
    link: b.link,
    open: b.open,
  };
}

export function Buses() {
  const [buses, setBuses] = useState(null);
  const [error, setError] = useState('');
  const last = useRef({ at: 0, req: {} });
  const [rates, setRates] = useState({});
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const list = await api('/buses');
        if (stop) return;
        const now = Date.now();
        const r = {};
        for (const b of list) {
          const t = totals(b.stats);
          const prev = last.current.req[b.id];
          if (prev !== undefined && last.current.at) r[b.id] = ((t.requests - prev) * 1000) / (now - last.current.at);
        }
        last.current = { at: now, req: Object.fromEntries(list.map((b) => [b.id, totals(b.stats).requests])) };
        setRates(r);
        setBuses(list);
        setError('');
      } catch (err) {
        setError(err.message);
      }
    };
    void tick();
    const timer = setInterval(tick, 2000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);
  return html`
    <section aria-labelledby="buses-h">
      <div class="bar"><h1 id="buses-h">Buses</h1><a class="button" href="#/bus">Add a bus</a></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${buses === null ? html`<p>Loading…</p>` : buses.map((b) => {
        const t = totals(b.stats);
        const devices = Object.entries(b.stats?.devices ?? {});
        return html`<article class="card" key=${b.id}>
          <h2>${b.id} <small>${b.driver}${b.port ? ` · ${b.port}` : ''}${b.baud_rate ? ` · ${b.baud_rate} baud` : ''}${b.host ? ` · ${b.host}:${b.port}` : ''}</small>
            <span class=${`badge ${b.running ? 'state-Online' : 'state-Offline'}`}>${b.running ? 'running' : 'stopped'}</span>
            <a class="small" href=${`#/bus/${encodeURIComponent(b.id)}`}>Edit</a>
            ${(b.driver === 'modbus-rtu' || b.driver === 'modbus-tcp') && html`<a class="small" href=${`#/doctor/${encodeURIComponent(b.id)}`}>Bus doctor</a>`}</h2>
          ${b.error && html`<p class="error">${b.error}</p>`}
          <dl class="figures">
            <div><dt>Requests/s</dt><dd>${num(rates[b.id], 1)}</dd></div>
            <div><dt>Requests</dt><dd>${t.requests ?? '—'}</dd></div>
            <div><dt>Timeouts</dt><dd class=${t.timeouts ? 'warn' : ''}>${t.timeouts ?? '—'}</dd></div>
            <div><dt>CRC errors</dt><dd class=${t.crc ? 'warn' : ''}>${t.crc}</dd></div>
            <div><dt>Exceptions</dt><dd>${t.exceptions}</dd></div>
            <div><dt>Round trip</dt><dd>${t.rtt == null ? '—' : `${num(t.rtt, 1)} ms`}</dd></div>
            <div><dt>Queue</dt><dd>${t.queue ?? '—'}</dd></div>
            ${t.scanProbes !== undefined && html`<div title="Requests sent by unit-id scans: an id nobody owns does not answer, which is not a timeout of the bus">
              <dt>Scan probes</dt><dd>${t.scanProbes}${t.scanProbes ? html` <small>(${t.scanUnanswered} unanswered)</small>` : ''}</dd></div>`}
          </dl>
          ${devices.length > 0 && html`<div class="scroll"><table>
            <thead><tr><th scope="col">Device</th><th scope="col" class="num">Unit</th><th scope="col" class="num">Requests</th>
              <th scope="col" class="num">Timeouts</th><th scope="col" class="num">CRC</th><th scope="col">Poll cycle / interval</th><th scope="col">Health</th></tr></thead>
            <tbody>${devices.map(([id, d]) => html`<tr key=${id}>
              <td><a href=${`#/device/${encodeURIComponent(id)}`}>${id}</a></td><td class="num">${d.unitId}</td>
              <td class="num">${d.requests}</td><td class="num">${d.timeouts}</td><td class="num">${d.crcErrors}</td>
              <td>${Object.entries(d.pollCycleMs ?? {}).map(([every, ms]) => `${ms == null ? '—' : `${num(ms)} ms`} / ${every}`).join(', ')}</td>
              <td>${d.degraded ? html`<span class="badge state-MaybeOffline">backed off</span>` : 'ok'}</td></tr>`)}</tbody>
          </table></div>`}
        </article>`;
      })}
      <${ModbusServers} />
    </section>`;
}
