/**
 * Tests that need a peer (socat, pymodbus, mosquitto, chromium, root…) are registered through `needs`:
 * where the peer is there they are ordinary tests; where it is missing they are *skipped* (uvu counts them
 * in the closing line) with the reason printed once, never an early `return` that counts as passed.
 * Under CI=true a missing peer is a failure: `make test` installs every peer itself, so a skip in CI means a
 * broken install step, and a green run that tested nothing on a bus would hide it.
 */
import { test as uvuTest, type Callback, type Test } from 'uvu';

/** A test registrar: `(name, fn)`, as uvu's `test` and a suite are. */
export type Register<T = Record<string, unknown>> = (name: string, fn: Callback<T>) => void;

/** True where a missing peer must fail the run rather than skip (CI, or SHADOWGATE_PEERS=required). */
export function peersRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['CI'] === 'true' || env['SHADOWGATE_PEERS'] === 'required';
}

/** Each SKIP / MISSING PEER line once per file, however many suites of one group register through `needs`. */
const said = new Set<string>();
function sayOnce(line: string): void {
  if (said.has(line)) return;
  said.add(line);
  console.log(line);
}

/** The error a missing peer raises where peers are required. */
function missingPeer(label: string, why: string): Error {
  return new Error(`${label}: ${why}; make test installs it, and a missing peer fails where peers are required (CI=true or SHADOWGATE_PEERS=required)`);
}

/**
 * `t` itself when `why` is empty; otherwise a registrar whose tests are skipped (or, where peers are
 * required, fail with `why`). `label` names the group in the one SKIP line.
 */
export function needs<T = Record<string, unknown>>(why: string | null | undefined | false, label: string, t: Test<T> = uvuTest as unknown as Test<T>): Register<T> {
  if (!why) return t;
  if (peersRequired()) {
    sayOnce(`MISSING PEER: ${label}: ${why} (its tests count as failed)`);
    return (name) => t(name, () => {
      throw missingPeer(label, why);
    });
  }
  sayOnce(`SKIP: ${label}: ${why}`);
  return (name, fn) => t.skip(name, fn);
}

/**
 * For a check inside a test that checks something real without the peer too (an independent cross-check
 * by a second tool): true when `why` is empty; otherwise prints the SKIP line and returns false, or, where
 * peers are required, throws, so the test fails naming the peer.
 */
export function hasPeer(why: string | null | undefined | false, label: string): boolean {
  if (!why) return true;
  if (peersRequired()) throw missingPeer(label, why);
  sayOnce(`SKIP: ${label}: ${why}`);
  return false;
}

/**
 * `fn` where the peer is there, else a no-op: uvu runs a file's or a suite's before/after hooks even when
 * every one of its tests is skipped, so a hook that starts the peer (a rig, a browser) is registered
 * through this rather than returning early on `why`.
 */
export function peerHook<T = Record<string, unknown>>(why: string | null | undefined | false, fn: Callback<T>): Callback<T> {
  return why ? () => {} : fn;
}
