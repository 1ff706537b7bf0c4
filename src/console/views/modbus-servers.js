// The Modbus servers beside the buses they share: per server its clients connected, and per unit how many
// requests came, how many the last poll answered (hits), how many went to the bus (misses), and exceptions —
// so a client reading registers nobody polls, or a dead unit, shows at once. Figures from /system.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

export function ModbusServers() {
  const [servers, setServers] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const info = await api('/system');
        if (stop) return;
        setServers(info.modbusServers ?? {});
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
  const list = Object.entries(servers ?? {});
  if (list.length === 0 && !error) return null;
  return html`
    <section aria-labelledby="servers-h">
      <h2 id="servers-h">Modbus servers</h2>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${list.map(([id, s]) => {
        const units = Object.entries(s.units ?? {}).sort(([a], [b]) => Number(a) - Number(b));
        return html`<article class="card" key=${id} data-server=${id}>
          <h3>${id} <span class=${`badge ${s.running === false ? 'state-Offline' : 'state-Online'}`}>${s.running === false ? 'not running' : 'running'}</span></h3>
          ${s.error && html`<p class="error">${s.error}</p>`}
          ${s.running !== false && s.connections !== undefined && html`<dl class="figures">
            <div><dt>Clients connected</dt><dd data-k="connections">${s.connections}</dd></div>
            <div><dt>Refused</dt><dd>${s.refused ?? 0}</dd></div>
            <div><dt>Requests</dt><dd>${s.total?.requests ?? 0}</dd></div>
          </dl>`}
          ${units.length > 0 && html`<div class="scroll"><table class="server-units">
            <thead><tr><th scope="col" class="num">Unit</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Hits</th>
              <th scope="col" class="num">Misses</th><th scope="col" class="num">Writes</th><th scope="col" class="num">Exceptions</th></tr></thead>
            <tbody>${units.map(([unit, c]) => html`<tr key=${unit} data-unit=${unit}>
              <td class="num">${unit}</td><td class="num" data-k="requests">${c.requests}</td><td class="num" data-k="hits">${c.hits}</td>
              <td class="num" data-k="misses">${c.misses}</td><td class="num">${c.writes}</td>
              <td class=${`num${c.exceptions ? ' warn' : ''}`} data-k="exceptions"
                title=${Object.entries(c.codes ?? {}).map(([code, n]) => `0x${Number(code).toString(16).padStart(2, '0')}: ${n}`).join(', ')}>${c.exceptions}</td></tr>`)}</tbody>
          </table></div>`}
        </article>`;
      })}
    </section>`;
}
