/**
 * The shadow's online/offline rules (DESIGN.md §3, the ★ decisions as written there): a request that succeeded,
 * one that failed, a forced offline, and the periodic TTL sweep. Pure: time from the shadow's Clock.
 */
import { FAILURE_WINDOW_MS, INITIALIZING, MAX_FAILURES, MAYBE_OFFLINE, OFFLINE, ONLINE, ShadowBase } from './shadow-base.js';
import { STATE_CODE } from './table.js';

export class ShadowLiveness extends ShadowBase {
  // ---- online / offline ------------------------------------------------------------------------

  /**
   * Rule 2 — a send/read succeeded: failures reset, MaybeOffline → Online, Offline → Initializing
   * (alive, waiting for its first value). ★ It also restarts the TTL clock (updatedAt = now): upstream
   * does not, which flips a forced-online device back offline at the next sweep.
   */
  SetOnline(id: string): void {
    const d = this.slotOf(id);
    const t = this.table;
    const now = this.clock.now();
    t.devDisconnect[d] = 0;
    t.devUpdatedAt[d] = now;
    t.devSeenMono[d] = this.clock.mono();
    t.devVersion[d]!++;
    this.changeSeq++;
    const state = t.devState[d]!;
    if (state === OFFLINE) this.transition(d, INITIALIZING, now);
    else if (state === MAYBE_OFFLINE) this.transition(d, ONLINE, now);
  }

  SetOffline(id: string): void {
    const d = this.slotOf(id);
    if (this.table.devState[d] !== OFFLINE) this.goOffline(d, 'forced', this.clock.now());
  }

  /** Rules 3–6 (★ either condition sends the device offline). Called once per failed request. */
  MayBeOffline(id: string): void {
    const d = this.slotOf(id);
    const t = this.table;
    if (t.devState[d] === OFFLINE) return;
    const now = this.clock.now();
    const failures = ++t.devDisconnect[d]!;
    t.devVersion[d]!++;
    this.changeSeq++;
    if (failures >= MAX_FAILURES) this.goOffline(d, 'failures', now);
    else if (this.clock.mono() - t.devSeenMono[d]! > FAILURE_WINDOW_MS) this.goOffline(d, 'no-data', now);
    else if (t.devState[d] === ONLINE) this.transition(d, MAYBE_OFFLINE, now);
  }

  /** Rule 7 / ★4: the periodic TTL check (every shadow.check_interval). */
  CheckTTL(): void {
    const t = this.table;
    const now = this.clock.now();
    const mono = this.clock.mono();
    for (const d of this.index.values()) {
      const state = t.devState[d]!;
      if (state === OFFLINE) continue;
      const seq = this.changeSeq;
      this.transition(d, STATE_CODE.Checking, now);
      if (this.expired(d, mono)) this.goOffline(d, 'ttl', now);
      else this.transition(d, state === INITIALIZING ? INITIALIZING : t.devDisconnect[d]! > 0 ? MAYBE_OFFLINE : ONLINE, now);
      // The sweep's transient Checking is no change: an idle shadow must not be saved again every interval (flash).
      if (t.devState[d] === state) this.changeSeq = seq;
    }
  }
}
