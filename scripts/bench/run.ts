/**
 * `make bench`: every benchmark, each printed as measured / target (MET or MISS) beside the configuration it
 * measured and its baseline of the same run. Issue 16's seven figures come first, measured with the shipped
 * defaults on (fleet F: scripts/bench/fleet-f.ts) on the release bundle with the unit's node flags.
 * `BENCH_WINDOW_S=600` gives the footprint window the issue's 10 minutes (default 60 s). `BENCH_LONG=1` adds
 * the long-run memory figure (scripts/bench/long-run.ts: 20 more minutes).
 */
import { benchConsole } from './console.js';
import { benchFootprint } from './footprint.js';
import { benchIngest } from './ingest.js';
import { benchLongRun } from './long-run.js';
import { benchModbusBus } from './modbus-bus.js';
import { benchModbusDoor } from './modbus-door.js';
import { benchModbus } from './modbus-planner.js';
import { benchMqtt } from './mqtt.js';
import { benchPersist } from './persist.js';
import { benchPersona } from './persona.js';
import { report } from './report.js';
import { benchStall } from './stall.js';

console.log('shadowgate benchmarks (each figure against its target; baselines measured in this run)');
console.log('\n# 1, 2, 4, 6: footprint, flash writes, REST and start-up with fleet F');
report(await benchFootprint());
if (process.env.BENCH_LONG === '1') {
  console.log('\n# memory once the history is full (it seals and drops segments for good)');
  await benchLongRun();
}
console.log('\n# 3: event-loop stalls with a snapshot, a bridge draining and a 30-day aggregate at once');
report(await benchStall());
console.log('\n# 5: MQTT delivery (Mosquitto measured in the same run as the reference)');
report(await benchMqtt());
console.log('\n# 7: CPU and memory on a real 9600-baud Modbus RTU bus');
report(await benchModbusBus());
console.log('\n# the Modbus TCP server (front door) on a 9600-baud RTU bus');
report(await benchModbusDoor());
console.log('\n# an RTU persona polled every 200 ms (PERSONA_BENCH_WINDOW_S=600: 10 minutes)');
report(await benchPersona());
console.log('\n# the parts alone');
report(benchIngest());
report(await benchPersist());
report(await benchModbus());
report(await benchConsole());
// The history bench is a script of its own (prints measured / target as it goes).
await import('./history.js');
