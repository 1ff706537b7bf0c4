/**
 * The event-loop delay part reports a real stall as its delay beyond the sampling interval, per 10 s window,
 * and does not wake a loop that sleeps.
 */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createEventLoopPart, type EventLoopStats } from '../../src/runtime/event-loop.js';

test('a 120 ms busy loop shows as a ~100+ ms max and p99 in the whole-run figures; a quiet loop shows ~0', async () => {
  const part = createEventLoopPart();
  await part.start();
  try {
    const quiet = part.stats();
    assert.equal(quiet, { windowP99Ms: 0, windowMaxMs: 0, p99Ms: 0, maxMs: 0 }, 'nothing before the first window');
    await new Promise((r) => setTimeout(r, 500));
    const end = Date.now() + 120;
    while (Date.now() < end) { /* a stall, as a synchronous parse of a big file would be */ }
    await new Promise((r) => setTimeout(r, 10_300)); // the 10 s window closes
    const s = part.stats() as EventLoopStats;
    assert.ok(s.windowMaxMs >= 90 && s.windowMaxMs < 200, `window max ${s.windowMaxMs} ms`);
    assert.ok(s.maxMs >= 90, `whole-run max ${s.maxMs} ms`);
    assert.ok(s.windowP99Ms < s.windowMaxMs, `p99 ${s.windowP99Ms} below the one stall`);
  } finally {
    await part.stop();
  }
});

/** Times the main thread went to sleep (voluntary context switches, Linux): for an event loop, its wake-ups. */
const sleeps = (): number => Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8'))?.[1]);

test('a loop that sleeps is not woken by the monitor (a 20 ms sampling timer would wake it ~50 times in a second)', async () => {
  const part = createEventLoopPart();
  await part.start();
  try {
    const before = sleeps();
    await new Promise((r) => setTimeout(r, 1000));
    const woken = sleeps() - before;
    assert.ok(woken < 10, `${woken} wake-ups in 1 s`);
  } finally {
    await part.stop();
  }
});

test.run();
