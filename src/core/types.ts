/** Shared shadow types. Internal model: camelCase, points as a map, ISO 8601 times (SPEC "Internal shadow model"). */

/** A point value as the shadow holds it: numbers for int/float points, text for string points. */
export type Value = number | string;

export type PointType = 'int' | 'float' | 'string';
export type Access = 'R' | 'W' | 'RW';

/** The six states of the seed's state table. */
export type DeviceState = 'Offline' | 'Initializing' | 'Online' | 'Checking' | 'MaybeOffline' | 'Refreshing';

/** Zero time of the seed: a point never written has this writeAt. */
export const ZERO_TIME_ISO = '0001-01-01T00:00:00Z';

export interface DevicePoint {
  name: string;
  /** Latest value read from the device; null until one arrives. */
  value: Value | null;
  /** Control value most recently sent down; null when never written. */
  writeValue: Value | null;
  updatedAt: string;
  writeAt: string;
  /** Set when the device reported "not available" for the point: why value is null. */
  reason?: string;
}

export interface Device {
  id: string;
  modelName: string;
  points: Record<string, DevicePoint>;
  online: boolean;
  state: DeviceState;
  /** Duration text as Go prints it (`5m0s`). */
  ttl: string;
  disconnectTimes: number;
  updatedAt: string;
  version: number;
}

/** Per-point options given when a device is added from config. */
export interface PointSpec {
  name: string;
  /** `always`: every update raises dataChange; `change` (default): only a changed value does. */
  report?: 'change' | 'always';
  /**
   * A running total only this gateway keeps (a GPIO pulse counter): restore keeps its value past the device
   * TTL (shown with its saved time, not served as fresh), so the count goes on after a long power cut.
   */
  keep?: boolean;
}

export interface AddDeviceOptions {
  points?: readonly PointSpec[];
}

export interface SetOptions {
  /** Optimistic concurrency: refuse the update when the device's version differs. */
  expectedVersion?: number;
  /** Points the device answered for with its own "not available" marker, and why: null values, same update. */
  unavailable?: Readonly<Record<string, string>>;
  /** Values before rounding to the model's `decimals`, for the points where rounding changed them (kept for personas). */
  exact?: Readonly<Record<string, number>>;
}
