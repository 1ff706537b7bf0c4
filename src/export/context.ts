/** What the composition root hands the export room: the shadow, the bus, the write path and config slices. */
import type { Clock } from '../core/clock.js';
import type { EventBus, ShadowEvents } from '../core/events.js';
import type { DeviceIO } from '../core/io.js';
import type { DeviceRecord } from '../core/records.js';
import type { Access, PointType } from '../core/types.js';
import type { Logger } from '../util/logger.js';
import type { MqttConfig, ShadowExportConfig } from '../config/types.js';

/** The read side of the shadow the exporters need (structurally the core `Shadow`). */
export interface ShadowView {
  /** One device with epoch-ms times (no ISO text built), or null. */
  GetDeviceRecord(id: string): DeviceRecord | null;
  /** Sorted ids, without copying any point data. */
  GetDeviceIds(): string[];
  HasDevice(id: string): boolean;
}

/** Model info per point, for Home Assistant discovery. */
export interface PointInfo {
  name: string;
  type: PointType;
  access: Access;
  unit?: string;
  /** On/off point (coil, discrete input, GPIO line, modbus data_type bool): HA switch/binary_sensor. */
  binary?: boolean;
  /** The register's data type (`int16`, `uint32`, `float32`…): bounds what a write can carry. */
  dataType?: string;
  /** value = raw × scale + offset. */
  scale?: number;
  offset?: number;
  decimals?: number;
  /** The model's bounds of what a write may set. */
  min?: number;
  max?: number;
  /** Coded values (raw code → meaning): the state carries the meaning; a write sends one. */
  values?: Record<string, number | string>;
}

/** What Home Assistant's device block says about a device, beyond its id. */
export interface DiscoveryDevice {
  model: string;
  manufacturer?: string;
  sw_version?: string;
  configuration_url?: string;
}

/** The config slices come from the one schema (src/config/types.ts): durations ms, sizes bytes. */
export type { MqttConfig, ShadowExportConfig } from '../config/types.js';
export type { MqttBridgeConfig as BridgeConfig } from '../config/types.js';

export interface ExportContext {
  shadow: ShadowView;
  bus: EventBus<ShadowEvents>;
  io: DeviceIO;
  /** The whole shadow in the REST shape (built by the api layer). */
  shadowJson(): unknown;
  devicePoints(id: string): PointInfo[];
  /** What Home Assistant's device block says about a device (manufacturer, model, versions, console URL). */
  deviceInfo?(id: string, modelName: string): DiscoveryDevice;
  mqtt: MqttConfig;
  export: { shadow: ShadowExportConfig };
  gatewayId: string;
  /** Retained messages and the bridge queue live under `<dataDir>/mqtt/`. */
  dataDir: string;
  clock: Clock;
  log: Logger;
}
