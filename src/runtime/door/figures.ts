/** What a Modbus server counts, per client address and per unit: enough to see who reads what, how stale. */

export interface Counts {
  requests: number;
  /** Reads answered from the last poll (no frame on the bus). */
  hits: number;
  /** Reads that went to the bus (or shared a read in flight). */
  misses: number;
  writes: number;
  exceptions: number;
  /** Exception answers by code ("11": 3). */
  codes: Record<string, number>;
  /** From the server taking a request up to its answer being ready, seconds (a Prometheus histogram's parts). */
  latency: Latency;
}

/**
 * Upper bounds of the latency buckets, seconds: a hit takes well under a millisecond, a miss one bus
 * transaction (tens of ms at 9600 baud), a dead unit the bus's timeout times its tries (seconds).
 */
export const LATENCY_BOUNDS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;

export interface Latency {
  /** Requests per bucket (not cumulative): `buckets[i]` took at most LATENCY_BOUNDS_S[i] and more than the one before; the last is over all bounds. */
  buckets: number[];
  sum: number;
  count: number;
}

/** Clients remembered at most (by address): a scan from many addresses cannot grow the map without end. */
export const MAX_CLIENTS_TRACKED = 256;

/** Counts with nothing counted yet (also a persona unit's, runtime/persona/unit.ts). */
export const zeroCounts = (): Counts => ({
  requests: 0, hits: 0, misses: 0, writes: 0, exceptions: 0, codes: {},
  latency: { buckets: new Array<number>(LATENCY_BOUNDS_S.length + 1).fill(0), sum: 0, count: 0 },
});

export type Outcome = 'hit' | 'miss' | 'write' | { exception: number };

export class Figures {
  readonly total = zeroCounts();
  private readonly clients = new Map<string, Counts>();
  private readonly units = new Map<number, Counts>();

  count(client: string, unit: number, outcome: Outcome): void {
    let c = this.clients.get(client);
    if (!c && this.clients.size < MAX_CLIENTS_TRACKED) this.clients.set(client, (c = zeroCounts()));
    let u = this.units.get(unit);
    if (!u) this.units.set(unit, (u = zeroCounts()));
    for (const x of [this.total, c, u]) {
      if (!x) continue;
      x.requests++;
      if (outcome === 'hit') x.hits++;
      else if (outcome === 'miss') x.misses++;
      else if (outcome === 'write') x.writes++;
      else {
        x.exceptions++;
        x.codes[outcome.exception] = (x.codes[outcome.exception] ?? 0) + 1;
      }
    }
  }

  /** One answered request took `seconds` (counted for the total, its client and its unit). */
  latency(client: string, unit: number, seconds: number): void {
    let i = 0;
    while (i < LATENCY_BOUNDS_S.length && seconds > LATENCY_BOUNDS_S[i]!) i++;
    for (const x of [this.total, this.clients.get(client), this.units.get(unit)]) {
      if (!x) continue;
      x.latency.buckets[i]!++;
      x.latency.sum += seconds;
      x.latency.count++;
    }
  }

  snapshot(): { total: Counts; clients: Record<string, Counts>; units: Record<string, Counts> } {
    const copy = (c: Counts): Counts => ({ ...c, codes: { ...c.codes }, latency: { ...c.latency, buckets: [...c.latency.buckets] } });
    return {
      total: copy(this.total),
      clients: Object.fromEntries([...this.clients].map(([k, v]) => [k, copy(v)])),
      units: Object.fromEntries([...this.units].map(([k, v]) => [String(k), copy(v)])),
    };
  }
}
