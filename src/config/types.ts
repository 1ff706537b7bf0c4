/**
 * The loaded configuration, after schema validation with defaults filled in and durations/sizes parsed.
 * Shape and defaults live in schema.json (the single source); this file is its TypeScript mirror.
 * Durations are milliseconds, sizes bytes.
 */
import type { Access, PointType } from '../core/types.js';

export interface ModbusPointBlock {
  table: 'coil' | 'discrete' | 'input' | 'holding';
  /** 0-based protocol address (1-based reference notation is converted on load). */
  address: number;
  data_type: 'bool' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float32' | 'float64' | 'string';
  /** Registers for `string`. */
  length?: number;
  /** Bit within the register value (0 = least significant); 0..31 in 32-bit values. */
  bit?: number;
  /** Width of the bit field starting at `bit` (default 1). */
  bits?: number;
  word_order: 'big' | 'little';
  byte_order: 'big' | 'little';
  /** SunSpec model id(s): `address` is the offset inside that model's block until the driver resolves it. */
  sunspec_model?: number | number[];
  /** SunSpec: where the point lives in the float models instead (offset, type there); its scale factor does not apply. */
  sunspec_float?: { sunspec_model: number[]; address: number; data_type?: ModbusPointBlock['data_type'] };
}

export interface GpioPointBlock {
  /** BCM number (header pin names like "P1-11" are mapped on load by the gpio driver). Absent on a `rate_of` point. */
  pin?: number | string;
  direction?: 'in' | 'out';
  edge?: 'none' | 'rising' | 'falling' | 'both';
  active_low?: boolean;
  /** ms */
  debounce?: number;
  initial?: 0 | 1;
  /** Counts pulses on the input: the point is the total (pulses / pulses_per_unit). */
  counter?: GpioCounterBlock;
  /** The point is the rate of the named counter point of the same model; it has no line of its own. */
  rate_of?: string;
}

export interface GpioCounterBlock {
  pulses_per_unit: number;
  /** Time base of the rate points: units of the total per hour, minute or second. */
  rate_per: 'h' | 'min' | 's';
  /** ms without a pulse after which the rate is 0. */
  rate_timeout: number;
}

export type SimPointBlock =
  | { fn: 'constant'; value: number | string }
  | { fn: 'sine'; min: number; max: number; /** ms */ period: number }
  | { fn: 'random_walk'; min: number; max: number; step: number }
  | { fn: 'counter'; step: number };

export interface PointConfig {
  name: string;
  type: PointType;
  access: Access;
  /** A line setting written only when a device unlocks it (`unlock_writes`); read-only otherwise. */
  guarded?: boolean;
  unit?: string;
  description?: string;
  scale: number;
  offset: number;
  decimals?: number;
  /** Bounds of what a write may set (reads are not clipped). */
  min?: number;
  max?: number;
  /** Raw values that are not measurements: the value is null with the reason (docs/model-fields.md). */
  invalid?: { raw: number | string; reason: string }[];
  /** Coded values: raw code → meaning. */
  values?: Record<string, number | string>;
  /** Another point whose raw value e scales this one by 10^e (SunSpec). */
  scale_factor?: string;
  unverified?: string;
  /** Overrides the device's poll, ms. */
  poll?: number;
  report: 'change' | 'always';
  modbus?: ModbusPointBlock;
  gpio?: GpioPointBlock;
  sim?: SimPointBlock;
}

export interface ModelConfig {
  name: string;
  manufacturer?: string;
  description?: string;
  /** Where the register map comes from (document and version, or the open-source driver). */
  source?: string;
  /** Hardware variants or firmware versions the map is for. */
  covers?: string[];
  /** What of the map is not confirmed by a source. */
  unverified?: string;
  /** Factory serial settings (informational). */
  serial?: { baud_rate?: number; parity?: 'none' | 'even' | 'odd'; data_bits?: 7 | 8; stop_bits?: 1 | 2; unit_id?: number };
  /** What the device tolerates (its protocol document); the planner and the writer obey it. */
  limits?: { max_registers?: number; max_bits?: number; max_gap?: 'auto' | number; max_write_registers?: number };
  /** How one register is written (some meters refuse FC06). */
  write?: { single_register: 'fc06' | 'fc16' };
  /** SunSpec: base found by the "SunS" marker at one of these addresses. */
  sunspec?: { search: number[] };
  /** Served as a persona: fixed register values (marker, model IDs, identity, scale factors); points that serve another point's binding. */
  persona?: PersonaModel;
  points: PointConfig[];
}

/** A model's `persona` section: what a persona of it serves besides the points' own registers, and who reads it. */
export interface PersonaModel {
  constants?: Record<string, number | string>;
  same_as?: Record<string, string>;
  /** What FC04 reads: the input table (default), the holding table (a meter answering FC03 and FC04 alike), or nothing (0x01). */
  fc04?: 'input' | 'holding' | 'input-or-holding' | 'none';
  /** Point -> a second address in its table where the same words are served (an address sources disagree on). */
  also_at?: Record<string, number>;
  /** Consumers known to read this persona, and the points each reads (a config leaving one unreadable is refused). */
  consumers?: { name: string; reads: string[] }[];
}

export interface BusConfig {
  id: string;
  driver: 'simulator' | 'modbus-rtu' | 'modbus-tcp' | 'gpio';
  /** Driver-specific keys (port, baud_rate, host, …), validated by the schema per driver. */
  [key: string]: unknown;
}

/** Read-planner knobs shared by both Modbus buses. */
export interface ModbusBusCommon {
  /** ms */
  timeout: number;
  retries: number;
  max_registers: number;
  /** Largest register gap one read may bridge; "auto" = derived from the wire cost at the bus speed. */
  max_gap: 'auto' | number;
}

export interface SimulatorBusConfig extends BusConfig {
  driver: 'simulator';
}

export interface ModbusRtuBusConfig extends BusConfig, ModbusBusCommon {
  driver: 'modbus-rtu';
  port: string;
  baud_rate: number;
  parity: 'none' | 'even' | 'odd';
  data_bits: 7 | 8;
  stop_bits: 1 | 2;
  /** The adapter hands back what the gateway sends: true drops our own bytes, "auto" turns that on when seen (schema default false). */
  echo: boolean | 'auto';
  /** RS-485 direction: set in the kernel (the UART drives DE/RE from RTS), or a DE pin the gateway drives. Absent: the adapter does it. */
  rs485?: Rs485Config;
}

/** Bus option `rs485` (schema defaults filled: rts_on_send true, delays 0). */
export type Rs485Config =
  | { mode: 'kernel'; rts_on_send: boolean; delay_before_send_us: number; delay_after_send_us: number }
  | { mode: 'gpio'; /** BCM number of the transceiver's DE/RE pin. */ de_pin: number };

export interface ModbusTcpBusConfig extends BusConfig, ModbusBusCommon {
  driver: 'modbus-tcp';
  host: string;
  port: number;
}

export interface GpioBusConfig extends BusConfig {
  driver: 'gpio';
  /** gpiochip label overriding detection. */
  chip?: string;
}

/** Narrows a bus by its driver: `if (isBus(bus, 'modbus-rtu')) bus.baud_rate`. */
export type BusByDriver = {
  simulator: SimulatorBusConfig;
  'modbus-rtu': ModbusRtuBusConfig;
  'modbus-tcp': ModbusTcpBusConfig;
  gpio: GpioBusConfig;
};
export const isBus = <D extends BusConfig['driver']>(bus: BusConfig, driver: D): bus is BusByDriver[D] => bus.driver === driver;

/** Simulator fault knobs on a device (tests and demos): fail the first N reads, or never answer. */
export interface SimFault {
  fail_reads?: number;
  silent?: boolean;
}

export interface DeviceConfig {
  id: string;
  model: string;
  bus: string;
  /** ms */
  ttl?: number;
  /** ms, default 1s */
  poll: number;
  /** Modbus unit id 1..247 (required on Modbus buses). */
  unit_id?: number;
  /** Fewer registers per read than the bus allows, for devices that refuse long reads. */
  max_registers?: number;
  /** Longest register gap a read of this device may bridge. */
  max_gap?: number;
  /** Guarded points this device may write (the integrator's opt-in). */
  unlock_writes?: string[];
  description?: string;
  sim_fault?: SimFault;
  [key: string]: unknown;
}

export interface MqttUserConfig {
  username: string;
  /** Output of `shadowgate hash-password`. */
  password_hash: string;
  can_write: boolean;
}

export interface MqttBridgeConfig {
  url: string;
  username?: string;
  password?: string;
  topic_prefix: string;
  /** bytes */
  queue_max: number;
  client_id?: string;
}

export interface MqttConfig {
  enable: boolean;
  host: string;
  port: number;
  ws_port: number;
  base_topic: string;
  users: MqttUserConfig[];
  allow_anonymous: boolean;
  homeassistant: { enable: boolean; prefix: string };
  bridge?: MqttBridgeConfig;
  [key: string]: unknown;
}

export interface ShadowExportConfig {
  enable: boolean;
  format: 'json';
  /** ms */
  interval: number;
  /** Subset of "mqtt", "http", "file". */
  targets: string[];
  /** timeout in ms; queue_max in exports (a count). */
  http?: { url: string; timeout: number; queue_max: number };
  /** max_size in bytes. */
  file?: { path: string; mode: 'snapshot' | 'append'; max_size: number };
  [key: string]: unknown;
}

/** Wi-Fi client on wlan0 (see system.wifi in schema.json). */
export interface WifiConfig {
  ssid: string;
  /** Passphrase (8-63 printable ASCII) or 64 hex digits (the derived key). */
  psk: string;
  /** ISO 3166 regulatory domain, e.g. "DE". */
  country: string;
  hidden: boolean;
}

/** The SD image's settings, applied by `shadowgate boot-config`; the gateway ignores them. */
export interface SystemConfig {
  hostname?: string;
  wifi?: WifiConfig;
  ssh_authorized_keys: string[];
}

export interface GatewayConfig {
  /** data_dir is absolute after loading (a relative one is resolved against the process's cwd). */
  gateway: { id: string; data_dir: string; log_level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'; board?: string };
  /** body_limit in bytes. */
  http: { host: string; port: number; body_limit: number; /** DNS names browsers may use (api/host-guard.ts). */ allowed_hosts: string[]; auth: { tokens: string[]; read_tokens: string[]; protect_reads: boolean } };
  mqtt: MqttConfig;
  /** Durations in ms. */
  shadow: { max_devices: number; max_points: number; default_ttl: number; check_interval: number; persist_interval: number };
  /** retention in ms, max_disk in bytes. */
  history: { enable: boolean; retention: number; max_disk: number };
  export: { shadow: ShadowExportConfig };
  buses: BusConfig[];
  /** Library (board/models/*.json) and inline models merged, by name; `name` defaults to the key. */
  models: Record<string, ModelConfig>;
  devices: DeviceConfig[];
  servers: ServerConfig[];
  system: SystemConfig;
}

/** One unit id of a Modbus server: a device's own registers, or a persona (a library model served from shadow points). */
export interface ServerUnitConfig {
  unit: number;
  device?: string;
  writes: boolean;
  /** ms; absent: the server's. */
  max_age?: number;
  persona?: string;
  /** Persona: model point -> source (see schema). */
  bind?: Record<string, unknown>;
  write?: Record<string, 'store' | 'forward' | 'reject'>;
  stale?: 'silent' | 'exception' | 'hold';
  capture?: boolean;
  /** W: a persona's largest power, which sets its SunSpec power scale factors. */
  rated_power?: number;
}

interface ServerCommon {
  id: string;
  /** ms */
  max_age: number;
  units: ServerUnitConfig[];
  diagnostic_unit?: number;
}

/** A Modbus TCP server ("the front door"). */
export interface TcpServerConfig extends ServerCommon {
  transport: 'tcp';
  /** mbap: Modbus TCP; rtu: RTU frames (unit, PDU, CRC) over the TCP stream. */
  framing: 'mbap' | 'rtu';
  host: string;
  port: number;
  allow: string[];
  max_clients: number;
  /** Bus reads and writes per second per connection. */
  miss_rate: number;
}

export interface RtuServerConfig extends ServerCommon {
  transport: 'rtu';
  port: string;
  baud_rate: number;
  parity: 'none' | 'even' | 'odd';
  data_bits: 7 | 8;
  stop_bits: 1 | 2;
}

export type ServerConfig = TcpServerConfig | RtuServerConfig;

/** A device with its model resolved: what a driver is handed. */
export interface ResolvedDevice {
  config: DeviceConfig;
  model: ModelConfig;
  /** Points by name, for validation on the write path. */
  points: Map<string, PointConfig>;
  ttl: number;
}
