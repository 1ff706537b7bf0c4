/**
 * Driver name → factory loader. The only place that knows every driver; used by the composition root.
 * Loaded on demand: a gateway without Modbus buses never loads serialport, one without GPIO never
 * loads onoff.
 */
import type { DriverFactory } from './types.js';

export const driverFactories: Partial<Record<string, () => Promise<DriverFactory>>> = {
  simulator: async () => (await import('./simulator.js')).createSimulatorDriver,
  gpio: async () => (await import('./gpio.js')).createGpioDriver,
  'modbus-rtu': async () => (await import('./modbus-rtu.js')).createModbusRtuDriver,
  'modbus-tcp': async () => (await import('./modbus-tcp.js')).createModbusTcpDriver,
};
