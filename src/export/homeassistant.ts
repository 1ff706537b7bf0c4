/**
 * Home Assistant MQTT discovery (https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery):
 * one HA device per gateway device, one entity per point, configs retained under
 * `<prefix>/<component>/<gateway>_<device>/<point>/config`, availability wired to the device's
 * availability topic. Pure: builds topics and payloads; the exporter publishes them.
 */
import type { PointInfo } from './context.js';
import type { Topics } from './topics.js';

export type HaComponent = 'sensor' | 'binary_sensor' | 'switch' | 'number' | 'text';

export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/** HA object ids allow `[a-zA-Z0-9_-]` only. */
export const haId = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, '_');

// A point with no model hint is taken as on/off when its name says so and it carries no unit.
const BINARY_NAME = /^(relay|switch|coil|di|do|din|dout|input|output|led|door|window|motion|alarm|contact|button|state|on|enable|enabled|fault)(_?\d+)?$|_(on|state|alarm|fault|relay)$/i;

/** Point info, plus an optional hint the model gives when the point is a coil/discrete/GPIO line or data_type bool. */
export type HaPointInfo = PointInfo & { binary?: boolean };

export function isBinaryPoint(p: HaPointInfo): boolean {
  if (p.binary !== undefined) return p.binary && p.type === 'int';
  return p.type === 'int' && !p.unit && BINARY_NAME.test(p.name);
}

export function componentFor(p: HaPointInfo): HaComponent {
  const writable = p.access !== 'R';
  if (p.type === 'string') return writable ? 'text' : 'sensor';
  if (isBinaryPoint(p)) return writable ? 'switch' : 'binary_sensor';
  return writable ? 'number' : 'sensor';
}

const UNIT_CLASS: Record<string, [deviceClass: string, stateClass: string]> = {
  '°C': ['temperature', 'measurement'], '°F': ['temperature', 'measurement'], K: ['temperature', 'measurement'],
  V: ['voltage', 'measurement'], mV: ['voltage', 'measurement'], kV: ['voltage', 'measurement'],
  A: ['current', 'measurement'], mA: ['current', 'measurement'],
  W: ['power', 'measurement'], kW: ['power', 'measurement'],
  VA: ['apparent_power', 'measurement'], var: ['reactive_power', 'measurement'], kvar: ['reactive_power', 'measurement'],
  Wh: ['energy', 'total_increasing'], kWh: ['energy', 'total_increasing'], MWh: ['energy', 'total_increasing'],
  Hz: ['frequency', 'measurement'],
  Pa: ['pressure', 'measurement'], hPa: ['pressure', 'measurement'], kPa: ['pressure', 'measurement'],
  bar: ['pressure', 'measurement'], mbar: ['pressure', 'measurement'], psi: ['pressure', 'measurement'],
  lx: ['illuminance', 'measurement'], dBm: ['signal_strength', 'measurement'],
  s: ['duration', 'measurement'], ms: ['duration', 'measurement'], min: ['duration', 'measurement'], h: ['duration', 'measurement'],
};

/** HA device_class and state_class a unit implies (`%` only when the name says humidity: it is ambiguous). */
export function classesFor(p: PointInfo): { device_class?: string; state_class?: string } {
  if (p.type === 'string') return {};
  const unit = p.unit === 'degC' || p.unit === 'C' ? '°C' : p.unit;
  if (unit === '%' && /humid/i.test(p.name)) return { device_class: 'humidity', state_class: 'measurement' };
  const known = unit ? UNIT_CLASS[unit] : undefined;
  if (known) return { device_class: known[0], state_class: known[1] };
  return { state_class: 'measurement' };
}

/** What the HA device block says about the device, beyond its id. */
export interface DiscoveryDevice {
  model: string;
  manufacturer?: string;
  sw_version?: string;
  configuration_url?: string;
}

export interface DiscoveryInput {
  prefix: string;
  gatewayId: string;
  deviceId: string;
  device: DiscoveryDevice;
  points: readonly HaPointInfo[];
  /** The topics the configs name: the local ones, or the upstream ones behind a bridge. */
  topics: Topics;
  /**
   * Behind a bridge, the link's state topic upstream: an entity is available only while both the device and
   * the link are (the device's retained `online` upstream would outlive a gateway that lost its link).
   */
  linkTopic?: string;
}

export function discoveryNode(gatewayId: string, deviceId: string): string {
  return `${haId(gatewayId)}_${haId(deviceId)}`;
}

/** The discovery messages for one device (one per point). */
export function discoveryMessages(input: DiscoveryInput): DiscoveryMessage[] {
  const { prefix, gatewayId, deviceId, topics } = input;
  const node = discoveryNode(gatewayId, deviceId);
  const device = {
    identifiers: [node],
    name: deviceId,
    manufacturer: 'shadowgate',
    ...input.device,
  };
  const availability = input.linkTopic
    ? { availability: [{ topic: topics.availability(deviceId) }, { topic: input.linkTopic }], availability_mode: 'all' }
    : { availability_topic: topics.availability(deviceId) };
  return input.points.map((p) => {
    const component = componentFor(p);
    const key = JSON.stringify(p.name);
    const payload: Record<string, unknown> = {
      name: p.name,
      unique_id: `${node}_${haId(p.name)}`,
      state_topic: topics.state(deviceId),
      value_template: `{{ value_json[${key}] }}`,
      ...availability,
      payload_available: 'online',
      payload_not_available: 'offline',
      device,
      origin: { name: 'shadowgate' },
    };
    const setTemplate = `{{ {${key}: value} | tojson }}`;
    switch (component) {
      case 'sensor':
        if (p.unit) payload.unit_of_measurement = p.unit;
        Object.assign(payload, classesFor(p));
        break;
      case 'binary_sensor':
        Object.assign(payload, { payload_on: '1', payload_off: '0' });
        break;
      case 'switch':
        Object.assign(payload, {
          command_topic: topics.set(deviceId),
          payload_on: JSON.stringify({ [p.name]: 1 }),
          payload_off: JSON.stringify({ [p.name]: 0 }),
          state_on: '1',
          state_off: '0',
        });
        if (p.access === 'W') payload.optimistic = true;
        break;
      case 'number':
        Object.assign(payload, {
          command_topic: topics.set(deviceId),
          command_template: setTemplate,
          mode: 'box',
          // HA's defaults are 1..100; a register holds far more.
          min: p.type === 'int' ? -2147483648 : -1e9,
          max: p.type === 'int' ? 2147483647 : 1e9,
          step: p.type === 'int' ? 1 : 0.001,
        });
        if (p.unit) payload.unit_of_measurement = p.unit;
        if (p.access === 'W') payload.optimistic = true;
        break;
      case 'text':
        Object.assign(payload, { command_topic: topics.set(deviceId), command_template: setTemplate, max: 255 });
        break;
    }
    return { topic: `${prefix}/${component}/${node}/${haId(p.name)}/config`, payload };
  });
}
