// Home Assistant: what to enter in HA's MQTT integration, whether HA was seen (its birth) and how many configs
// went out, and the three ways to connect it (docs/homeassistant.md).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

export function HomeAssistant() {
  const [st, setSt] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const s = await api('/homeassistant');
        if (!stop) {
          setSt(s);
          setError('');
        }
      } catch (err) {
        if (!stop) setError(err.message);
      }
    };
    void tick();
    const timer = setInterval(tick, 3000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);
  if (!st) return html`<section><h1>Home Assistant</h1>${error ? html`<p class="error" role="alert">${error}</p>` : html`<p>Loading…</p>`}</section>`;
  const b = st.broker;
  const seen = st.seen;
  return html`
    <section aria-labelledby="ha-h">
      <h1 id="ha-h">Home Assistant</h1>
      ${!st.discovery ? html`<p class="warn" role="status">Discovery is off: set <code>mqtt.homeassistant.enable</code> in the configuration, with <code>mqtt.enable</code> or <code>mqtt.bridge</code>.</p>` : ''}
      ${b.refusedPublishes > 0 ? html`<p class="warn" role="status" data-k="refused">${`${b.refusedPublishes} ${b.refusedPublishes === 1 ? 'command' : 'commands'} from MQTT clients refused: `}a switch or number in HA does nothing when HA logs in without a user that may write. Add an <code>mqtt.users</code> entry with <code>can_write</code> and enter it in HA's MQTT integration (the gateway's log names the client).</p>` : ''}
      <h2>Connect HA's MQTT integration to</h2>
      <dl class="figures">
        <div><dt>Broker</dt><dd data-k="broker">${b.enabled ? `${b.host}:${b.port}` : 'MQTT off'}</dd></div>
        <div><dt>Login</dt><dd data-k="login">${b.login}</dd></div>
        <div><dt>Anonymous</dt><dd>${b.anonymousAllowed ? 'allowed (read only)' : 'refused'}</dd></div>
        <div><dt>Discovery prefix</dt><dd>${st.prefix}</dd></div>
      </dl>
      <h2>Seen</h2>
      <dl class="figures">
        <div><dt>Home Assistant</dt><dd data-k="seen" class=${seen.haSeen ? '' : 'warn'}>${seen.haSeen ? `seen, last birth ${seen.lastBirthAt}` : 'not seen yet'}</dd></div>
        <div><dt>Births</dt><dd>${seen.births}</dd></div>
        <div><dt>Configs sent</dt><dd data-k="configs">${seen.configsSent}</dd></div>
        ${st.bridge ? html`
          <div><dt>Upstream broker</dt><dd class=${st.bridge.connected ? '' : 'warn'}>${st.bridge.url} (${st.bridge.connected ? 'connected' : 'not connected'})</dd></div>
          <div><dt>Configs sent upstream</dt><dd>${st.bridge.configsSent}, HA births there ${st.bridge.haBirthsUpstream}</dd></div>` : ''}
      </dl>
      <h2>Three ways to connect</h2>
      <ol>
        <li><strong>HA on this gateway's broker</strong>: add HA's MQTT integration with the broker above. Without a login HA
          sees every entity but cannot switch anything; a user with <code>can_write</code> in <code>mqtt.users</code> can.</li>
        <li><strong>HA on its own Mosquitto</strong>: set <code>mqtt.bridge</code> to that broker; the configs go there under HA's
          prefix, retained, naming the topics there.</li>
        <li><strong>HA's modbus integration</strong>: a Modbus TCP server of the gateway (<code>servers</code>, transport tcp,
          each unit id mapped to a device) answers HA's requests without a second master on the RS-485 line.</li>
      </ol>
    </section>`;
}
