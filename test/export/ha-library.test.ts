/**
 * Every discovery config of every model in the library (board/models/*.json), checked against Home Assistant's
 * own rules (ha-sensor-rules.ts: HA's device class ↔ unit table and allowed state classes), plus the entity
 * kinds the library's points call for: counters as totals, on/off points as switches, value maps as
 * select/enum, numbers bounded by the register type, binary sensor classes, names and the device block.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readModelLibrary } from '../../src/config/models.js';
import type { ModelConfig } from '../../src/config/types.js';
import { discoveryMessages, type DiscoveryMessage } from '../../src/export/homeassistant.js';
import { Topics } from '../../src/export/topics.js';
import { haDeviceInfo, haPointInfo } from '../../src/runtime/ha-info.js';
import { BINARY_SENSOR_CLASSES, onlyClassFor, sensorProblems } from './ha-sensor-rules.js';

const library = readModelLibrary();
const models = Object.values(library.models).map((m) => m.raw as ModelConfig);

function configsOf(model: ModelConfig): DiscoveryMessage[] {
  const dev = { model };
  return discoveryMessages({
    prefix: 'homeassistant', gatewayId: 'gw1', deviceId: 'dev', topics: new Topics('sg'),
    device: haDeviceInfo(dev, model.name, '9.9.9', 'http://192.0.2.1:8080/'),
    points: haPointInfo(dev),
  });
}

const all = models.flatMap((m) => configsOf(m).map((c) => ({ model: m, topic: c.topic, c: c.payload })));
const find = (model: string, point: string): Record<string, unknown> => {
  const hit = all.find((x) => x.model.name === model && x.topic.endsWith(`/dev/${point}/config`.replace('/dev/', '_dev/')));
  assert.ok(hit, `${model}.${point} has a config`);
  return hit!.c;
};
const componentOf = (model: string, point: string): string => all.find((x) => x.model.name === model && x.topic.endsWith(`_dev/${point}/config`))!.topic.split('/')[1]!;

test('the library is there: every model, every point gets a config', () => {
  assert.equal(library.problems, []);
  assert.ok(models.length >= 20, `${models.length} models`);
  assert.is(all.length, models.reduce((n, m) => n + m.points.length, 0));
});

test('every sensor config keeps HA\'s table: device class ↔ unit, state class allowed for the class', () => {
  const problems: string[] = [];
  for (const { model, topic, c } of all) {
    if (!topic.startsWith('homeassistant/sensor/')) continue;
    for (const p of sensorProblems(c)) problems.push(`${model.name} ${topic}: ${p}`);
    const unit = c.unit_of_measurement as string | undefined;
    // A unit HA ties to exactly one class gets that class (a phase angle in ° is not a wind direction).
    const only = unit && unit !== '°' ? onlyClassFor(unit) : null;
    if (only && c.device_class !== only) problems.push(`${model.name} ${topic}: unit ${unit} without device_class ${only}`);
  }
  assert.equal(problems, []);
});

test('units as HA spells them; counters are totals', () => {
  const units = new Set(all.map((x) => x.c.unit_of_measurement).filter(Boolean));
  for (const bad of ['%RH', 'uS/cm', 'deg']) assert.not.ok(units.has(bad), `no ${bad}`);
  const counters = all.filter((x) => ['Wh', 'kWh', 'kvarh'].includes(x.c.unit_of_measurement as string));
  assert.ok(counters.length > 30);
  for (const x of counters) assert.is(x.c.state_class, 'total_increasing', `${x.model.name} ${x.topic}`);
  assert.equal([find('xy-md02', 'humidity').device_class, find('xy-md02', 'humidity').unit_of_measurement], ['humidity', '%']);
  assert.equal([find('renke-rs-ws-n01', 'humidity').device_class, find('renke-rs-ws-n01', 'humidity').state_class], ['humidity', 'measurement']);
  assert.is(find('eastron-sdm120', 'import_reactive_energy').state_class, 'total_increasing');
  assert.is(find('deye-hybrid-1p', 'battery_soc').device_class, 'battery');
  assert.is(find('comwintop-soil-thc-s', 'moisture').device_class, 'moisture');
  assert.equal([find('comwintop-soil-thc-s', 'conductivity').device_class, find('comwintop-soil-thc-s', 'conductivity').unit_of_measurement], ['conductivity', 'µS/cm']);
  assert.is(find('eastron-sdm630', 'total_power_factor').device_class, 'power_factor');
  // Scale factors and addresses are not measurements: no statistics, listed as diagnostics.
  assert.equal([find('sunspec-inverter', 'w_sf').state_class, find('sunspec-inverter', 'w_sf').entity_category], [undefined, 'diagnostic']);
  // A power factor's scale factor is an exponent, not a power factor.
  assert.equal([find('sunspec-inverter', 'pf_sf').device_class, find('sunspec-inverter', 'pf_sf').entity_category], [undefined, 'diagnostic']);
  // Identity codes and settings are no measurements: the Eastron meter code and system type are diagnostics.
  // So are a SunSpec chain's model ids and lengths and the EM24's application setting.
  for (const [model, point] of [['eastron-sdm630', 'meter_code'], ['eastron-sdm630', 'system_type'], ['eastron-sdm120', 'software_version'],
    ['sunspec-meter-203', 'meter_id'], ['sunspec-meter-203', 'common_length'], ['sunspec-meter-203-213', 'float_meter_length'],
    ['sunspec-inverter-103', 'end_id'], ['carlo-gavazzi-em24', 'application']] as const) {
    assert.equal([find(model, point).state_class, find(model, point).entity_category], [undefined, 'diagnostic'], `${model}.${point}`);
  }
});

test('on/off points are switches and binary sensors with classes; value maps are select/enum', () => {
  for (const [m, p] of [['gpio-relay-2ch', 'relay1'], ['waveshare-modbus-rtu-relay', 'relay_1'], ['waveshare-modbus-rtu-io-8ch', 'output_1'], ['gpio-status-led', 'led']]) {
    assert.is(componentOf(m!, p!), 'switch', `${m}.${p}`);
  }
  assert.is(componentOf('waveshare-modbus-rtu-io-8ch', 'input_1'), 'binary_sensor');
  const pir = find('gpio-pir', 'motion');
  assert.equal([componentOf('gpio-pir', 'motion'), pir.device_class, pir.payload_on], ['binary_sensor', 'motion', '1']);
  // `closed` is 1 when the contact is closed; HA's door is on when open.
  const door = find('gpio-contact', 'closed');
  assert.equal([door.device_class, door.payload_on, door.payload_off], ['door', '0', '1']);
  assert.is(find('peacefair-pzem-016', 'alarm').device_class, 'problem');
  for (const { topic, c } of all) {
    if (topic.startsWith('homeassistant/binary_sensor/') && c.device_class !== undefined) assert.ok(BINARY_SENSOR_CLASSES.has(c.device_class as string), topic);
  }
  const baud = find('renke-rs-ws-n01', 'baud_rate');
  assert.equal([baud.device_class, baud.options, baud.unit_of_measurement, baud.state_class], ['enum', ['2400', '4800', '9600'], undefined, undefined]);
  assert.is(find('sunspec-inverter', 'operating_state').device_class, 'enum');
});

test('numbers are bounded by the register type and scale', () => {
  const ref = find('abb-acs355', 'reference_1');
  assert.equal([componentOf('abb-acs355', 'reference_1'), ref.min, ref.max, ref.step], ['number', -32768, 32767, 1]);
  // A guarded setting is read-only until the device unlocks it.
  assert.is(componentOf('xy-md02', 'slave_address'), 'sensor');
  const xy = models.find((m) => m.name === 'xy-md02')!;
  const unlocked = discoveryMessages({
    prefix: 'homeassistant', gatewayId: 'gw1', deviceId: 'dev', topics: new Topics('sg'), device: { model: 'xy-md02' },
    points: haPointInfo({ model: xy, config: { unlock_writes: ['slave_address'] } }),
  }).find((m) => m.topic === 'homeassistant/number/gw1_dev/slave_address/config');
  assert.equal([unlocked?.payload.min, unlocked?.payload.max], [0, 65535]);
  const corr = find('xy-md02', 'humidity_correction');
  assert.equal([corr.min, corr.max, corr.unit_of_measurement], [-3276.8, 3276.7, '%']);
  for (const { topic, c } of all) {
    if (!topic.startsWith('homeassistant/number/')) continue;
    assert.ok((c.min as number) < (c.max as number) && (c.step as number) > 0, topic);
    assert.ok(Math.abs(c.max as number) <= 4294967295 * 10 || !Number.isInteger(c.max), `${topic}: ${c.max}`);
  }
});

test('names for people, the device block from the library', () => {
  assert.is(find('abb-b23', 'voltage_l1').name, 'Voltage L1');
  assert.is(find('gpio-relay-2ch', 'relay1').name, 'Relay 1');
  assert.is(find('deye-hybrid-1p', 'pv1_current').name, 'PV1 current');
  for (const { model, c } of all) {
    const d = c.device as Record<string, unknown>;
    assert.equal([d.manufacturer, d.model], [model.manufacturer ?? 'shadowgate', model.name]);
    assert.equal([d.sw_version, d.configuration_url, d.via_device], ['9.9.9', 'http://192.0.2.1:8080/', undefined]);
  }
  // Behind a bridge the gateway is an HA device of its own (its upstream link), and the devices hang off it.
  const via = discoveryMessages({
    prefix: 'homeassistant', gatewayId: 'gw1', deviceId: 'dev', topics: new Topics('sg'), device: { model: 'm' },
    points: haPointInfo({ model: models[0]! }), viaGateway: true,
  });
  assert.ok(via.every((m) => (m.payload.device as { via_device: string }).via_device === 'gw1'));
  assert.is((find('abb-b23', 'voltage_l1').device as { manufacturer: string }).manufacturer, 'ABB');
});

test.run();
