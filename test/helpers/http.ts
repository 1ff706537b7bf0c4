/** Small HTTP helpers for tests over real sockets; every request has a timeout. */
export interface Envelope<T = unknown> {
  success: boolean;
  errorCode: number;
  errorMsg: string;
  data: T;
}

export async function call<T = unknown>(port: number, path: string, init: RequestInit = {}): Promise<{ status: number; body: Envelope<T> }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: (await res.json()) as Envelope<T> };
}

/** Polls `check` until it returns a truthy value or the timeout passes. */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
