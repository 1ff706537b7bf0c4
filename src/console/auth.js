// The token prompt: shown when the gateway answers 401; the token is kept for this browser session only.
import { useEffect, useRef, useState } from 'preact/hooks';
import { onTokenNeeded, setToken, token } from './api.js';
import { html } from './html.js';

let show = null;
onTokenNeeded((reason) => new Promise((resolve) => show?.({ reason, resolve })));

export function TokenPrompt() {
  const [ask, setAsk] = useState(null);
  const [value, setValue] = useState('');
  const input = useRef(null);
  useEffect(() => {
    show = setAsk;
    return () => (show = null);
  }, []);
  useEffect(() => {
    if (ask) input.current?.focus();
  }, [ask]);
  if (!ask) return null;
  const done = (t) => {
    ask.resolve(t);
    setAsk(null);
    setValue('');
  };
  return html`<div class="modal" role="dialog" aria-modal="true" aria-labelledby="token-h">
    <form onSubmit=${(e) => { e.preventDefault(); done(value.trim() || null); }}>
      <h2 id="token-h">Access token needed</h2>
      <p>${ask.reason}. The token is printed on the gateway's console at first boot and kept in
        <code>/data/config/api-token</code>.</p>
      <label>Token <input ref=${input} type="password" autocomplete="current-password" value=${value} onInput=${(e) => setValue(e.currentTarget.value)} /></label>
      <div class="actions"><button type="submit" class="primary">Use this token</button>
        <button type="button" onClick=${() => done(null)}>Cancel</button></div>
    </form></div>`;
}

export const forgetToken = () => setToken('');
export const hasToken = () => token() !== '';
