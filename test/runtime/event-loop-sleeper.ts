/**
 * Run as its own process by event-loop.test.ts: in the test runner's shared process, timers other test files
 * leave behind wake the loop too. Prints how often the main thread went to sleep (voluntary context switches,
 * Linux: for an event loop, its wake-ups) during 1 s of an idle loop, with the monitor running if argv[2] is
 * `monitor`.
 */
import { readFileSync } from 'node:fs';
import { createEventLoopPart } from '../../src/runtime/event-loop.js';

const sleeps = (): number => Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8'))?.[1]);

const part = process.argv[2] === 'monitor' ? createEventLoopPart() : null;
await part?.start();
await new Promise((r) => setTimeout(r, 200)); // start-up's own work (module loading) settles first
const before = sleeps();
await new Promise((r) => setTimeout(r, 1000));
console.log(JSON.stringify({ woken: sleeps() - before }));
await part?.stop();
