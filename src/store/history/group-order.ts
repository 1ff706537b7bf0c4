/** The order a seal writes a log's blocks in: grouped by series and kind, each group in time order. */
import { KIND_STR } from './format.js';

/**
 * Indices grouped by (series, kind), each group ordered by `times` (ties in arrival order). A counting
 * sort on the group key (O(n), typed arrays) and a sort only of the groups that arrived out of time order: a
 * comparison sort of a whole 8 MiB log (~600k samples) held the event loop for ~200 ms (issue 16's stall goal
 * is 50 ms).
 */
export function groupOrder(series: ArrayLike<number>, kinds: ArrayLike<number>, times: ArrayLike<number>): Uint32Array {
  const steps = groupOrderSteps(series, kinds, times);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Elements between two of groupOrderSteps' pauses. */
const GROUP_STEP = 16_384;

/**
 * groupOrder in steps the caller may yield the event loop between: for a log's 131,072 blocks it took 10–55 ms
 * in one run (55 the first time, before the JIT compiled it: a seal runs about once a minute).
 */
export function* groupOrderSteps(series: ArrayLike<number>, kinds: ArrayLike<number>, times: ArrayLike<number>): Generator<void, Uint32Array> {
  const n = series.length;
  // The key is recomputed where it is needed, not kept: a column of n keys was 0.5 MB of a fleet seal's transient.
  const keyOf = (i: number): number => series[i]! * 2 + (kinds[i] === KIND_STR ? 1 : 0);
  let maxKey = 0;
  for (let i = 0; i < n; i++) {
    if (i % GROUP_STEP === GROUP_STEP - 1) yield;
    const k = keyOf(i);
    if (k > maxKey) maxKey = k;
  }
  // One column over the key space (a fleet's keys reach twice its series count): counts, then each key's end,
  // then, filled from the back, each key's start; key k's group is [start[k], start[k + 1]).
  const start = new Uint32Array(maxKey + 2);
  for (let i = 0; i < n; i++) {
    if (i % GROUP_STEP === GROUP_STEP - 1) yield;
    start[keyOf(i) + 1]!++;
  }
  for (let k = 1; k < start.length; k++) {
    if (k % GROUP_STEP === 0) yield;
    start[k]! += start[k - 1]!;
  }
  // start[k + 1] is key k's end: filled from the back, equal keys keep their arrival order, and it ends at key
  // k + 1's start. Shifted down one place, the column is then every key's start again.
  const order = new Uint32Array(n);
  for (let i = n - 1; i >= 0; i--) {
    if (i % GROUP_STEP === 0) yield;
    order[--start[keyOf(i) + 1]!] = i;
  }
  start.copyWithin(0, 1);
  start[maxKey + 1] = n;
  for (let k = 0, seen = 0; k <= maxKey; k++) {
    const a = start[k]!;
    const b = start[k + 1]!;
    seen += b - a + 1;
    if (seen >= GROUP_STEP) {
      seen = 0;
      yield;
    }
    let sorted = true;
    for (let j = a + 1; j < b; j++) {
      if (times[order[j]!]! < times[order[j - 1]!]!) {
        sorted = false;
        break;
      }
    }
    if (!sorted) order.subarray(a, b).sort((x, y) => times[x]! - times[y]! || x - y);
  }
  return order;
}
