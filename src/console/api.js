// The console's one way to the gateway: fetch with the session's token, the envelope unwrapped, and the
// live event stream. A 401 asks for a token once (auth.js) and retries.
const TOKEN_KEY = 'shadowgate.token';
let askToken = null;

export const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
export const setToken = (t) => (t ? sessionStorage.setItem(TOKEN_KEY, t) : sessionStorage.removeItem(TOKEN_KEY));
/** auth.js installs the prompt: a function that resolves with a token, or null when the user cancels. */
export const onTokenNeeded = (fn) => (askToken = fn);

export class ApiError extends Error {
  constructor(message, data) {
    super(message);
    this.data = data;
  }
}

/** After a 401: asks for a token (auth.js) and keeps it; false when the user cancels. */
export async function tokenAfter401(reason) {
  const given = askToken ? await askToken(reason) : null;
  if (given) setToken(given);
  return Boolean(given);
}

/**
 * fetch with the session's token; a 401 asks for a token once and tries again.
 * @param {string} url
 * @param {{ method?: string, headers?: Record<string, string>, body?: BodyInit }} [options]
 */
export async function authorizedFetch(url, { method = 'GET', headers = {}, body } = {}) {
  for (let attempt = 0; ; attempt++) {
    const h = { ...headers };
    if (token()) h.authorization = `Bearer ${token()}`;
    const res = await fetch(url, { method, headers: h, body });
    if (res.status === 401 && attempt === 0 && askToken) {
      const reason = await res.json().then((e) => e.errorMsg, () => 'authorization required');
      if (await tokenAfter401(reason)) continue;
    }
    return res;
  }
}

/**
 * GET/POST/PUT/DELETE under /api/v1; resolves with the envelope's data, rejects with its errorMsg.
 * @param {string} path
 * @param {{ method?: string, body?: unknown, raw?: boolean }} [options] `body` is sent as JSON; `raw`: `path` as it
 *   is, the answer as text
 */
export async function api(path, { method = 'GET', body, raw = false } = {}) {
  const headers = body === undefined ? {} : { 'content-type': 'application/json' };
  const res = await authorizedFetch(raw ? path : `/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (raw) {
    if (!res.ok) throw new ApiError(`${res.status} ${res.statusText}`);
    return res.text();
  }
  return unwrap(res);
}

/** The envelope's data, or an ApiError with its errorMsg. */
export async function unwrap(res) {
  const env = await res.json().catch(() => ({ success: false, errorMsg: `${res.status} ${res.statusText}` }));
  if (!env.success) throw new ApiError(env.errorMsg || `request failed (${res.status})`, env.data);
  return env.data;
}

/**
 * The shadow's events over /api/v1/ws, reconnecting with backoff (1 s doubling to 30 s). The browser cannot
 * set headers on a WebSocket, so the token goes in the query.
 */
export function liveEvents(onEvent, onState) {
  let ws = null;
  let delay = 1000;
  let closed = false;
  let timer = null;
  const open = () => {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = token() ? `?token=${encodeURIComponent(token())}` : '';
    ws = new WebSocket(`${proto}//${location.host}/api/v1/ws${q}`);
    ws.onopen = () => {
      delay = 1000;
      onState(true);
    };
    ws.onmessage = (m) => {
      try {
        onEvent(JSON.parse(m.data));
      } catch {
        /* not JSON: ignore */
      }
    };
    ws.onclose = () => {
      onState(false);
      if (closed) return;
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, 30_000);
    };
  };
  open();
  return () => {
    closed = true;
    clearTimeout(timer);
    ws?.close();
  };
}
