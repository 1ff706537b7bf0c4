/** What the running gateway says about itself: /metrics figures, /api/v1/health/shadow, the counter over REST. */
import { call } from '../../../test/helpers/http.js';
import { COUNTER, DEVICE } from '../kills/config.js';

export async function metrics(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^(\w+)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

export interface Health {
  status: string;
  /** Every lastError / error text in the report's checks, by check name. */
  errors: Record<string, string>;
  persistSeq: number;
  /** Clock time the last successful save ended, and how long it took (its snapshot was taken that much earlier). */
  lastSaveAt: number;
  lastSaveMs: number;
}

export async function health(port: number): Promise<Health> {
  const h = await call<{ status: string; checks: Record<string, Record<string, unknown>> }>(port, '/api/v1/health/shadow');
  const errors: Record<string, string> = {};
  for (const [name, check] of Object.entries(h.body.data.checks)) {
    const e = check['lastError'] ?? check['error'];
    if (typeof e === 'string' && e) errors[name] = e;
  }
  const p = h.body.data.checks['persistence'] ?? {};
  return { status: h.body.data.status, errors, persistSeq: Number(p['seq'] ?? 0), lastSaveAt: Number(p['lastSaveAt'] ?? 0), lastSaveMs: Number(p['lastSaveMs'] ?? 0) };
}

export async function counter(port: number): Promise<number | null> {
  const r = await call<{ value: number | null }>(port, `/api/v1/shadow/devicePoint?id=${DEVICE}&point=${COUNTER}`);
  return typeof r.body.data?.value === 'number' ? r.body.data.value : null;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 200 ms until it returns a value, or null after `ms`. */
export async function within<T>(ms: number, check: () => Promise<T | null | undefined | false>): Promise<T | null> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => null);
    if (v) return v;
    if (Date.now() > end) return null;
    await sleep(200);
  }
}
