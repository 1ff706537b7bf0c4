/** The one line for each start-up failure a user can fix (src/runtime/startup-failure.ts); anything else stays a bug. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import type { ServerConfig } from '../../src/config/types.js';
import { StartupError, describeServerFailure, describeStartupFailure } from '../../src/runtime/startup-failure.js';

const config = validateConfig({ gateway: { data_dir: '/var/lib/shadowgate' }, http: { port: 8081 }, mqtt: { port: 1883, ws_port: 8083 } }, { env: {} });
const errno = (code: string, extra: Record<string, unknown>): Error => Object.assign(new Error(`${code} something`), { code, ...extra });

test('ports in use name their setting, and Mosquitto on 1883', () => {
  assert.is(describeStartupFailure(errno('EADDRINUSE', { syscall: 'listen', port: 1883, address: '0.0.0.0' }), config),
    'mqtt.port 1883 is in use by another program (Mosquitto?): set mqtt.port or mqtt.enable=false');
  assert.match(describeStartupFailure(errno('EADDRINUSE', { syscall: 'listen', port: 8083 }), config)!, /^mqtt\.ws_port 8083 is in use/);
  assert.is(describeStartupFailure(errno('EADDRINUSE', { syscall: 'listen', port: 8081 }), config), 'http.port 8081 is in use by another program: set http.port');
  assert.match(describeStartupFailure(errno('EACCES', { syscall: 'listen', port: 8081 }), config)!, /below 1024|http\.port/);
});

test('data_dir not writable (itself or a parent), and a StartupError as it is', () => {
  assert.match(describeStartupFailure(errno('EACCES', { syscall: 'mkdir', path: '/var/lib' }), config)!, /^gateway\.data_dir \/var\/lib\/shadowgate is not writable \(EACCES on \/var\/lib\)/);
  assert.match(describeStartupFailure(errno('EROFS', { syscall: 'open', path: '/var/lib/shadowgate/gateway.lock' }), config)!, /not writable \(EROFS/);
  assert.is(describeStartupFailure(new StartupError('as given'), config), 'as given');
});

test('anything else is not explained (it keeps its stack)', () => {
  assert.is(describeStartupFailure(new TypeError('x is undefined'), config), undefined);
  assert.is(describeStartupFailure(errno('EACCES', { syscall: 'open', path: '/etc/other' }), config), undefined);
  // Another listener on the same host (a server another part starts) is not blamed on mqtt or http.
  assert.is(describeStartupFailure(errno('EADDRINUSE', { syscall: 'listen', port: 9999, address: '0.0.0.0' }), config), undefined);
});

test('a Modbus server\'s port names servers[<id>].port, and says the gateway runs on without it', () => {
  const withServer = validateConfig({ gateway: { data_dir: '/var/lib/shadowgate' }, http: { port: 8081 }, mqtt: { enable: false },
    servers: [{ id: 'door', transport: 'tcp', port: 1502 }, { id: 'line', transport: 'rtu', port: '/dev/ttyUSB1' }] }, { env: {} });
  const [door, line] = withServer.servers as [ServerConfig, ServerConfig];
  assert.is(describeServerFailure(errno('EADDRINUSE', { syscall: 'listen', port: 1502, address: '0.0.0.0' }), door),
    'servers[door].port 1502 is in use by another program: set servers[door].port; the gateway runs on without modbus server door');
  assert.match(describeServerFailure(errno('EACCES', { syscall: 'listen', port: 1502 }), door), /^servers\[door\]\.port 1502 is below 1024/);
  assert.is(describeServerFailure(errno('ENOENT', { syscall: 'open', path: '/dev/ttyUSB1' }), line),
    'servers[line].port /dev/ttyUSB1 cannot be opened: ENOENT something; the gateway runs on without modbus server line');
  // The gateway-wide describer knows the setting too (a listener failing outside the servers part).
  assert.is(describeStartupFailure(errno('EADDRINUSE', { syscall: 'listen', port: 1502 }), withServer), 'servers[door].port 1502 is in use by another program: set servers[door].port');
});

test.run();
