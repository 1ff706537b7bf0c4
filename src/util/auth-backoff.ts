/**
 * Slows down guessing of tokens and passwords, per source address: after the n-th failed attempt the
 * source waits `base × 2^(n-1)` (capped) before its next attempt is even judged, and the failure's own
 * answer is held that long, so a client trying in turn sees each answer come later, and a client trying
 * in parallel gets its other attempts refused unjudged. A success with write rights clears the source (a
 * read-only credential does not: its holder could otherwise guess the others at full speed). Memory is
 * bounded: at most `maxSources` sources, the least recently failed forgotten first, and a source quiet for
 * `forgetMs` starts afresh. REST (src/api/auth.ts) and MQTT (src/export/broker.ts) each keep one.
 */

export interface BackoffOptions {
  /** Hold after the first failure; doubles per further failure. Default 100 ms. */
  baseMs?: number;
  /** Longest hold. Default 30 s. */
  capMs?: number;
  /** A source without a failure for this long starts afresh. Default 15 min. */
  forgetMs?: number;
  /** Most sources remembered. Default 4096 (about 200 kB). */
  maxSources?: number;
  /** Attempts of one source waiting their turn (serial) before more are refused. Default 16. */
  maxQueued?: number;
  now?: () => number;
}

interface Entry {
  failures: number;
  until: number;
  last: number;
}

// A client that sends its next attempt the moment the held answer arrives is not early: timers and clocks
// differ by a millisecond or so.
const SLACK_MS = 5;

export class FailureBackoff {
  private readonly entries = new Map<string, Entry>();
  private readonly queues = new Map<string, { tail: Promise<unknown>; length: number }>();
  private readonly base: number;
  private readonly cap: number;
  private readonly forget: number;
  private readonly max: number;
  private readonly maxQueued: number;
  private readonly now: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.base = opts.baseMs ?? 100;
    this.cap = opts.capMs ?? 30_000;
    this.forget = opts.forgetMs ?? 15 * 60_000;
    this.max = opts.maxSources ?? 4096;
    this.maxQueued = opts.maxQueued ?? 16;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Sources remembered. */
  get size(): number {
    return this.entries.size;
  }

  private entry(source: string): Entry | undefined {
    const e = this.entries.get(source);
    if (e && this.now() - e.last > this.forget) {
      this.entries.delete(source);
      return undefined;
    }
    return e;
  }

  /** ms this source must still wait before an attempt of it may be judged; 0 = go ahead. */
  wait(source: string): number {
    const e = this.entry(source);
    const left = e ? e.until - this.now() : 0;
    return left > SLACK_MS ? Math.ceil(left) : 0;
  }

  /** Records a failed attempt; returns how long (ms) to hold its answer, the time the source is blocked. */
  fail(source: string): number {
    const now = this.now();
    const e = this.entry(source) ?? { failures: 0, until: 0, last: now };
    e.failures++;
    const hold = Math.min(this.cap, this.base * 2 ** Math.min(e.failures - 1, 30));
    e.until = now + hold;
    e.last = now;
    // Re-inserted so the map's order is the order of last failure: the first key is the one to evict.
    this.entries.delete(source);
    this.entries.set(source, e);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    return hold;
  }

  /** Failures recorded for the source (0 when unknown or forgotten). */
  failures(source: string): number {
    return this.entry(source)?.failures ?? 0;
  }

  succeed(source: string): void {
    this.entries.delete(source);
  }

  /**
   * Runs the attempts of one source one after another (a check that takes time, like scrypt), so a burst of
   * parallel guesses is judged in turn and the first failure's block stops the rest. Resolves `undefined`
   * without running `fn` when more than `maxQueued` attempts of the source already wait.
   */
  serial<T>(source: string, fn: () => Promise<T>): Promise<T | undefined> {
    const q = this.queues.get(source) ?? { tail: Promise.resolve(), length: 0 };
    if (q.length >= this.maxQueued) return Promise.resolve(undefined);
    q.length++;
    const run = q.tail.then(fn, fn);
    q.tail = run.catch(() => {}).then(() => {
      if (--q.length === 0) this.queues.delete(source);
    });
    this.queues.set(source, q);
    return run;
  }
}

/**
 * The key of a remote address: IPv4 as is (also when mapped into IPv6), IPv6 by its /64 (one host owns a
 * whole /64 and could otherwise step through addresses). Unknown addresses share one key.
 */
export function sourceKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
