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
}

/** Clients remembered at most (by address): a scan from many addresses cannot grow the map without end. */
export const MAX_CLIENTS_TRACKED = 256;

const zero = (): Counts => ({ requests: 0, hits: 0, misses: 0, writes: 0, exceptions: 0, codes: {} });

export type Outcome = 'hit' | 'miss' | 'write' | { exception: number };

export class Figures {
  readonly total = zero();
  private readonly clients = new Map<string, Counts>();
  private readonly units = new Map<number, Counts>();

  count(client: string, unit: number, outcome: Outcome): void {
    let c = this.clients.get(client);
    if (!c && this.clients.size < MAX_CLIENTS_TRACKED) this.clients.set(client, (c = zero()));
    let u = this.units.get(unit);
    if (!u) this.units.set(unit, (u = zero()));
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

  snapshot(): { total: Counts; clients: Record<string, Counts>; units: Record<string, Counts> } {
    const copy = (c: Counts): Counts => ({ ...c, codes: { ...c.codes } });
    return {
      total: copy(this.total),
      clients: Object.fromEntries([...this.clients].map(([k, v]) => [k, copy(v)])),
      units: Object.fromEntries([...this.units].map(([k, v]) => [String(k), copy(v)])),
    };
  }
}
