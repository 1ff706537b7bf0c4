/**
 * Where code the gateway runs often lets the event-loop monitor look at the loop (runtime/event-loop-turns.ts):
 * a look there splits the loop's busy time into the turns it came in, so the monitor needs no timer of its own
 * while the gateway works. A no-op until the monitor starts.
 */
let current: () => void = () => {};

export const loopLook = (): void => current();

export function setLoopLook(fn: (() => void) | null): void {
  current = fn ?? (() => {});
}
