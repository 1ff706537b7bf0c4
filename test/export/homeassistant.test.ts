import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashPassword } from '../../src/export/auth.js';
import { componentFor, discoveryMessages } from '../../src/export/homeassistant.js';
import { startExport } from '../../src/runtime/export.js';
import { Topics } from '../../src/export/topics.js';
import { collect, connectClient, endClient, makeFixture, MODEL_POINTS, removeDir, waitFor } from './helpers.js';

// Required/recognised keys per HA's MQTT platform docs (sensor, binary_sensor, switch, number, text).
const COMMON = ['name', 'unique_id', 'state_topic', 'availability_topic', 'payload_available', 'payload_not_available', 'device'];
const ALLOWED = new Set([...COMMON, 'value_template', 'origin', 'unit_of_measurement', 'device_class', 'state_class',
  'payload_on', 'payload_off', 'state_on', 'state_off', 'command_topic', 'command_template', 'optimistic', 'mode',
  'min', 'max', 'step']);

test('component per point: sensor, binary_sensor, switch, number, text', () => {
  const comps = Object.fromEntries(MODEL_POINTS.map((p) => [p.name, componentFor(p)]));
  assert.equal(comps, { temp: 'sensor', energy: 'sensor', relay1: 'switch', door: 'binary_sensor', setpoint: 'number', label: 'text' });
  assert.is(componentFor({ name: 'x', type: 'int', access: 'RW', binary: true } as never), 'switch');
  // The name rule runs when the model does not say the point is a line (an int register named relay).
  assert.is(componentFor({ name: 'relay1', type: 'int', access: 'RW', binary: false } as never), 'switch');
  assert.is(componentFor({ name: 'relay1', type: 'int', access: 'RW', unit: 'V' } as never), 'number');
});

test('a value map of 0 and 1 is on/off: switch sends the meanings, binary sensor is on for the meaning of 1', () => {
  const values = { 0: 'open', 1: 'closed' };
  const msgs = discoveryMessages({
    prefix: 'homeassistant', gatewayId: 'gw', deviceId: 'd', device: { model: 'm' }, topics: new Topics('sg'),
    points: [{ name: 'valve', type: 'int', access: 'RW', values }, { name: 'flap', type: 'int', access: 'R', values }],
  });
  const sw = msgs.find((m) => m.topic === 'homeassistant/switch/gw_d/valve/config')!.payload;
  assert.equal([sw.payload_on, sw.payload_off, sw.state_on, sw.state_off], ['{"valve":"closed"}', '{"valve":"open"}', 'closed', 'open']);
  const bs = msgs.find((m) => m.topic === 'homeassistant/binary_sensor/gw_d/flap/config')!.payload;
  assert.match(bs.value_template as string, /== "closed"/);
  // A value map with more codes is a select (RW) or an enum sensor (R) of the meanings.
  const sel = discoveryMessages({
    prefix: 'homeassistant', gatewayId: 'gw', deviceId: 'd', device: { model: 'm' }, topics: new Topics('sg'),
    points: [{ name: 'mode', type: 'int', access: 'RW', values: { 0: 'auto', 1: 'heat', 2: 'cool' } }],
  })[0]!;
  assert.is(sel.topic, 'homeassistant/select/gw_d/mode/config');
  assert.equal([sel.payload.options, sel.payload.command_topic], [['auto', 'heat', 'cool'], 'sg/d/set']);
});

test('discovery payloads carry HA fields, a device block and command paths', () => {
  const msgs = discoveryMessages({ prefix: 'homeassistant', gatewayId: 'gw-1', deviceId: 'dev1', device: { model: 'm' }, points: MODEL_POINTS, topics: new Topics('sg') });
  const by = Object.fromEntries(msgs.map((m) => [m.topic, m.payload]));
  const sw = by['homeassistant/switch/gw-1_dev1/relay1/config']!;
  assert.ok(sw, Object.keys(by).join(','));
  for (const m of msgs) {
    for (const k of COMMON) assert.ok(k in m.payload, `${m.topic} lacks ${k}`);
    for (const k of Object.keys(m.payload)) assert.ok(ALLOWED.has(k), `${m.topic}: unexpected key ${k}`);
    assert.equal((m.payload.device as { identifiers: string[] }).identifiers, ['gw-1_dev1']);
    assert.is(m.payload.availability_topic, 'sg/dev1/availability');
    assert.is(m.payload.state_topic, 'sg/dev1');
  }
  assert.is(sw.command_topic, 'sg/dev1/set');
  assert.is(sw.payload_on, '{"relay1":1}');
  assert.is(sw.state_on, '1');
  const temp = by['homeassistant/sensor/gw-1_dev1/temp/config']!;
  assert.equal([temp.device_class, temp.state_class, temp.unit_of_measurement], ['temperature', 'measurement', '°C']);
  assert.equal(by['homeassistant/sensor/gw-1_dev1/energy/config']!.state_class, 'total_increasing');
  const num = by['homeassistant/number/gw-1_dev1/setpoint/config']!;
  assert.is(num.command_topic, 'sg/dev1/set');
  assert.is(num.command_template, '{{ {"setpoint": value} | tojson }}');
  assert.ok((num.min as number) < 0 && (num.max as number) > 1000);
  // The model's write bounds narrow the register's range: HA offers only what a write may set.
  const bounded = discoveryMessages({ prefix: 'homeassistant', gatewayId: 'gw-1', deviceId: 'dev1', device: { model: 'm' },
    points: [{ name: 'sp', type: 'float', access: 'RW', dataType: 'int16', scale: 0.1, min: 5, max: 35 }], topics: new Topics('sg') });
  assert.equal([bounded[0]!.payload.min, bounded[0]!.payload.max], [5, 35]);
  assert.is(by['homeassistant/text/gw-1_dev1/label/config']!.command_topic, 'sg/dev1/set');
  assert.is(new Set(msgs.map((m) => m.payload.unique_id)).size, msgs.length);
});

test('discovery configs are sent at start and again on HA\'s birth message, not retained by the broker (memory); HA switch payload writes; device deletion removes them', async () => {
  const f = makeFixture({ mqtt: { homeassistant: { enable: true, prefix: 'homeassistant' }, users: [{ username: 'ha', password_hash: await hashPassword('pw'), can_write: true }] } });
  const gw = await startExport(f.ctx);
  const c = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`);
  const ha = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`, { username: 'ha', password: 'pw' });
  try {
    // The birth message itself is under homeassistant/# too: count the configs.
    const all = await collect(c, 'homeassistant/#');
    const configs = () => all.filter((m) => m.topic.endsWith('/config'));
    await new Promise((r) => setTimeout(r, 300));
    assert.is(configs().length, 0, 'nothing retained: a late subscriber gets no configs until HA announces itself');
    // HA's birth message (HA sends it each time it connects) makes the gateway send the configs again.
    await ha.publishAsync('homeassistant/status', 'online');
    await waitFor(() => configs().length === 12, 3000, '12 configs (2 devices x 6 points)');
    assert.ok(configs().every((m) => !m.retain), 'not retained');
    const sw = JSON.parse(configs().find((m) => m.topic === 'homeassistant/switch/gw1_dev1/relay1/config')!.payload);
    // What HA sends when the switch is turned on goes through the set path.
    await f.ctx.io.writePoints('dev1', Object.entries(JSON.parse(sw.payload_on)).map(([name, value]) => ({ name, value })));
    assert.equal(f.io.writes[0]!.values, [{ name: 'relay1', value: 1 }]);
    all.length = 0;
    f.shadow.DeleteDevice('dev2');
    await waitFor(() => configs().length === 6, 3000, 'six removals');
    assert.ok(configs().every((m) => m.topic.includes('gw1_dev2') && m.payload === ''));
    const stranger = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`, { username: 'ha', password: 'wrong' }).catch(() => null);
    assert.is(stranger, null, 'a wrong password is refused');
  } finally {
    await endClient(c);
    await endClient(ha);
    await gw.stop();
    removeDir(f.dir);
  }
});

test.run();
