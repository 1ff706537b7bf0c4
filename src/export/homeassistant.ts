/**
 * Home Assistant MQTT discovery (https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery):
 * one HA device per gateway device, one entity per point, configs retained under
 * `<prefix>/<component>/<gateway>_<device>/<point>/config`, availability wired to the device's
 * availability topic. Pure: builds topics and payloads; the exporter publishes them.
 */
import type { DiscoveryDevice, PointInfo } from './context.js';

export type { DiscoveryDevice } from './context.js';
import type { Topics } from './topics.js';
import { binaryClassFor, classesFor, haUnit, humanName, isDiagnostic } from './ha-classes.js';

export type HaComponent = 'sensor' | 'binary_sensor' | 'switch' | 'number' | 'select' | 'text';

export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/** HA object ids allow `[a-zA-Z0-9_-]` only. */
export const haId = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, '_');

// A point with no model hint is taken as on/off when its name says so and it carries no unit.
const BINARY_NAME = /^(relay|switch|coil|di|do|din|dout|input|output|led|door|window|motion|alarm|contact|button|state|on|enable|enabled|fault|closed)(_?\d+)?$|_(on|state|alarm|fault|relay|switch|coil)(_?\d+)?$/i;

/** Point info, as the model gives it (`binary`: a coil, discrete input, GPIO line or data_type bool). */
export type HaPointInfo = PointInfo;

/** A value map of exactly the codes 0 and 1: an on/off point whose states have names. */
const onOffMap = (p: PointInfo): boolean => !!p.values && Object.keys(p.values).sort().join() === '0,1';

export function isBinaryPoint(p: HaPointInfo): boolean {
  if (p.type !== 'int') return false;
  if (p.binary) return true;
  if (p.values) return onOffMap(p);
  return !p.unit && BINARY_NAME.test(p.name);
}

export function componentFor(p: HaPointInfo): HaComponent {
  const writable = p.access !== 'R';
  if (isBinaryPoint(p)) return writable ? 'switch' : 'binary_sensor';
  if (p.values) return writable ? 'select' : 'sensor';
  if (p.type === 'string') return writable ? 'text' : 'sensor';
  return writable ? 'number' : 'sensor';
}

// Raw ranges of the register data types (64-bit ones within what a JSON number holds exactly).
const RAW_RANGE: Record<string, [number, number]> = {
  bool: [0, 1], int16: [-32768, 32767], uint16: [0, 65535], int32: [-2147483648, 2147483647], uint32: [0, 4294967295],
  int64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER], uint64: [0, Number.MAX_SAFE_INTEGER],
  float32: [-3.4028234663852886e38, 3.4028234663852886e38], float64: [-Number.MAX_VALUE, Number.MAX_VALUE],
};

/** What a number entity may send: the register's range through scale and offset (within the model's min/max), and a step HA can show. */
export function numberRange(p: PointInfo): { min: number; max: number; step: number } {
  const raw: [number, number] = (p.dataType ? RAW_RANGE[p.dataType] : undefined) ?? (p.type === 'int' ? [-2147483648, 2147483647] : [-1e9, 1e9]);
  const scale = p.scale ?? 1;
  const offset = p.offset ?? 0;
  const ends = [raw[0] * scale + offset, raw[1] * scale + offset].sort((a, b) => a - b) as [number, number];
  const step = p.type === 'int' ? 1 : p.decimals !== undefined ? 10 ** -p.decimals : Math.abs(scale) < 1 ? Math.abs(scale) : 0.001;
  const round = (v: number): number => (Number.isFinite(v) ? Number(v.toPrecision(12)) : v);
  // The model's own bounds, where it has them, narrow the register's: HA offers only what a write may set.
  return { min: round(Math.max(ends[0], p.min ?? -Infinity)), max: round(Math.min(ends[1], p.max ?? Infinity)), step };
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
  /** The gateway is announced as an HA device of its own: the devices say they are reached through it. */
  viaGateway?: boolean;
}

/** The gateway's HA device identifier (a device's is `<gateway>_<device>`, never this). */
export const gatewayIdentifier = (gatewayId: string): string => haId(gatewayId);

/**
 * The gateway's own HA device, with one entity: its link to the upstream broker (connectivity), read from
 * `stateTopic` — `<base>/bridge/state` here, `<topic_prefix>/<base>/bridge/state` upstream (with a last will).
 */
export function gatewayMessage(prefix: string, gatewayId: string, stateTopic: string, device: Omit<DiscoveryDevice, 'model'>): DiscoveryMessage {
  const id = gatewayIdentifier(gatewayId);
  return {
    topic: `${prefix}/binary_sensor/${id}/upstream_link/config`,
    payload: {
      name: 'Upstream link',
      unique_id: `${id}_upstream_link`,
      state_topic: stateTopic,
      payload_on: 'online',
      payload_off: 'offline',
      device_class: 'connectivity',
      entity_category: 'diagnostic',
      device: { identifiers: [id], name: gatewayId, manufacturer: 'shadowgate', model: 'shadowgate gateway', ...device },
      origin: { name: 'shadowgate' },
    },
  };
}

export function discoveryNode(gatewayId: string, deviceId: string): string {
  return `${haId(gatewayId)}_${haId(deviceId)}`;
}

/** Where one entity's config goes: `<prefix>/<component>/<node>/<object id>/config`. */
export const configTopic = (prefix: string, component: HaComponent, node: string, objectId: string): string =>
  `${prefix}/${component}/${node}/${objectId}/config`;

/** The discovery messages for one device (one per point). */
export function discoveryMessages(input: DiscoveryInput): DiscoveryMessage[] {
  const { prefix, gatewayId, deviceId, topics } = input;
  const node = discoveryNode(gatewayId, deviceId);
  const device = {
    identifiers: [node],
    name: deviceId,
    manufacturer: 'shadowgate',
    ...input.device,
    // The gateway's own HA device (gatewayMessage), when it is announced.
    ...(input.viaGateway ? { via_device: gatewayIdentifier(gatewayId) } : {}),
  };
  const availability = input.linkTopic
    ? { availability: [{ topic: topics.availability(deviceId) }, { topic: input.linkTopic }], availability_mode: 'all' }
    : { availability_topic: topics.availability(deviceId) };
  return input.points.map((p) => {
    const component = componentFor(p);
    const key = JSON.stringify(p.name);
    const payload: Record<string, unknown> = {
      name: humanName(p.name),
      unique_id: `${node}_${haId(p.name)}`,
      state_topic: topics.state(deviceId),
      value_template: `{{ value_json[${key}] }}`,
      ...availability,
      payload_available: 'online',
      payload_not_available: 'offline',
      device,
      origin: { name: 'shadowgate', ...(input.device.sw_version ? { sw_version: input.device.sw_version } : {}) },
    };
    if (isDiagnostic(p)) payload.entity_category = 'diagnostic';
    const unit = haUnit(p.unit);
    const setTemplate = `{{ {${key}: value} | tojson }}`;
    const options = p.values ? Object.values(p.values).map(String) : undefined;
    switch (component) {
      case 'sensor':
        if (options) {
          // HA's enum sensor: a state outside `options` is an error, a null value renders None (unknown).
          Object.assign(payload, { device_class: 'enum', options });
          break;
        }
        if (unit && p.type !== 'string') payload.unit_of_measurement = unit;
        Object.assign(payload, classesFor(p));
        break;
      case 'binary_sensor': {
        const { device_class, inverted } = binaryClassFor(p.name);
        // Any non-zero value is on (an alarm register may read 0xFFFF), or with a value map the meaning of 1;
        // null stays unknown.
        const on = p.values ? ` == ${JSON.stringify(p.values['1'])}` : '';
        payload.value_template = `{{ 'None' if value_json[${key}] is none else ('1' if value_json[${key}]${on} else '0') }}`;
        Object.assign(payload, { payload_on: inverted ? '0' : '1', payload_off: inverted ? '1' : '0' });
        if (device_class) payload.device_class = device_class;
        break;
      }
      case 'switch': {
        const on = p.values ? (p.values['1'] as number | string) : 1;
        const off = p.values ? (p.values['0'] as number | string) : 0;
        Object.assign(payload, {
          command_topic: topics.set(deviceId),
          payload_on: JSON.stringify({ [p.name]: on }),
          payload_off: JSON.stringify({ [p.name]: off }),
          state_on: String(on),
          state_off: String(off),
        });
        if (p.access === 'W') payload.optimistic = true;
        break;
      }
      case 'select': {
        const numeric = Object.values(p.values!).every((v) => typeof v === 'number');
        Object.assign(payload, {
          command_topic: topics.set(deviceId),
          // The write path takes the meaning and sends its code.
          command_template: numeric ? `{{ {${key}: value | float} | tojson }}` : setTemplate,
          options,
        });
        if (p.access === 'W') payload.optimistic = true;
        break;
      }
      case 'number':
        Object.assign(payload, { command_topic: topics.set(deviceId), command_template: setTemplate, mode: 'box', ...numberRange(p) });
        if (unit) payload.unit_of_measurement = unit;
        if (p.access === 'W') payload.optimistic = true;
        break;
      case 'text':
        Object.assign(payload, { command_topic: topics.set(deviceId), command_template: setTemplate, max: 255 });
        break;
    }
    return { topic: configTopic(prefix, component, node, haId(p.name)), payload };
  });
}
