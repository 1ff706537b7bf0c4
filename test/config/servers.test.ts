import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { modbusConfig, problemsOf } from './helpers.js';

const points = [{ name: 'p', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'uint16' } }];
const withServers = (servers: unknown[]): Record<string, unknown> => ({ ...modbusConfig(points), servers });

test('servers: the contract names load with their defaults and durations in ms', () => {
  const config = validateConfig(withServers([{ id: 'door', transport: 'tcp', port: 1502, units: [{ unit: 1, device: 'm1' }, { unit: 10, device: 'm1', writes: true, max_age: '5s' }] }]), { env: {}, models: {} });
  assert.equal(config.servers, [{
    id: 'door', transport: 'tcp', host: '0.0.0.0', port: 1502, framing: 'mbap', max_age: 2000, allow: [], max_clients: 64, miss_rate: 20,
    units: [{ unit: 1, device: 'm1', writes: false }, { unit: 10, device: 'm1', writes: true, max_age: 5000 }],
  }]);
  assert.equal(validateConfig(modbusConfig(points), { env: {}, models: {} }).servers, []);
});

test('servers: duplicate unit ids, unknown devices, unit without a target, clashing endpoints are refused', () => {
  const problems = problemsOf(withServers([
    { id: 'door', transport: 'tcp', port: 1502, diagnostic_unit: 100, units: [{ unit: 1, device: 'm1' }, { unit: 1, device: 'nope' }, { unit: 3 }, { unit: 100, device: 'm1' }] },
    { id: 'door', transport: 'tcp', port: 1502 },
  ]));
  assert.equal(problems.sort(), [
    'servers[0].units[1].device: unknown device "nope" (known: m1)',
    'servers[0].units[1].unit: unit 1 is already used by servers[0].units[0]',
    'servers[0].units[2]: needs exactly one of "device" or "persona"',
    'servers[0].units[3].unit: unit 100 is already used by servers[0].diagnostic_unit',
    'servers[1].id: duplicate server id "door" (also servers[0])',
    'servers[1].port (server "door"): TCP port 1502 is already used by servers[0].port (server "door")',
  ].sort());
  assert.ok(problemsOf(withServers([{ id: 'd', transport: 'tcp', units: [{ unit: 0, device: 'm1' }] }])).some((p) => /units\[0\]\.unit/.test(p)), 'unit 0 is broadcast');
  assert.ok(problemsOf(withServers([{ id: 'd', transport: 'udp' }])).length > 0);
  assert.ok(problemsOf(withServers([{ id: 'd', transport: 'tcp', baud_rate: 9600 }])).length > 0, 'an RTU key on a TCP server');
});

test('ports: a tty has one owner (a bus or a server), a TCP port one listener; both users are named', () => {
  const rtuBus = (id: string, port: string): Record<string, unknown> => ({ id, driver: 'modbus-rtu', port, baud_rate: 9600 });
  const base = modbusConfig(points);
  const problems = problemsOf({
    ...base,
    buses: [...(base.buses as unknown[]), rtuBus('line2', '/dev/ttyUSB0'), rtuBus('line3', '/dev/ttyUSB1')],
    http: { port: 8080 },
    mqtt: { port: 1883, ws_port: 8080 },
    servers: [
      { id: 'meter', transport: 'rtu', port: '/dev/ttyUSB0', units: [{ unit: 1, persona: 'x' }] },
      { id: 'door', transport: 'tcp', host: '127.0.0.1', port: 1883 },
    ],
  }).filter((p) => /already used/.test(p));
  assert.equal(problems, [
    'buses[1].port (bus "line2"): serial port /dev/ttyUSB0 is already used by buses[0].port (bus "rs485"); a port has one owner (a bus or a server)',
    'mqtt.ws_port: TCP port 8080 is already used by http.port',
    'servers[0].port (server "meter"): serial port /dev/ttyUSB0 is already used by buses[0].port (bus "rs485"); a port has one owner (a bus or a server)',
    'servers[1].port (server "door"): TCP port 1883 is already used by mqtt.port',
  ]);
  // Different hosts on one port, port 0 twice, and a broker that is off do not clash.
  validateConfig({
    ...base,
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false, port: 1502, ws_port: 0 },
    servers: [{ id: 'a', transport: 'tcp', host: '127.0.0.1', port: 1502 }, { id: 'b', transport: 'tcp', host: '10.0.0.2', port: 1502 }, { id: 'c', transport: 'tcp', port: 0 }],
  }, { env: {}, models: {} });
});

test.run();
