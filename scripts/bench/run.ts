/** `make bench`: every benchmark, each printed as measured / target against a baseline of the same run. */
import { benchConsole } from './console.js';
import { benchGateway } from './gateway.js';
import { benchIngest } from './ingest.js';
import { benchModbus } from './modbus-planner.js';
import { benchMqtt } from './mqtt.js';
import { benchPersist } from './persist.js';
import { report } from './report.js';

console.log('shadowgate benchmarks (targets from issue 2; baselines measured in this run)');
report(benchIngest());
report(await benchPersist());
report(await benchGateway());
report(await benchModbus());
report(await benchMqtt());
report(await benchConsole());
// The history bench is a script of its own (prints measured / target as it goes).
await import('./history.js');
