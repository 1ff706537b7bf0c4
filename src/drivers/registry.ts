/** Driver name → factory. The only place that knows every driver; used by the composition root. */
import { createGpioDriver } from './gpio.js';
import { createModbusRtuDriver } from './modbus-rtu.js';
import { createModbusTcpDriver } from './modbus-tcp.js';
import { createSimulatorDriver } from './simulator.js';
import type { DriverFactory } from './types.js';

export const driverFactories: Partial<Record<string, DriverFactory>> = {
  simulator: createSimulatorDriver,
  gpio: createGpioDriver,
  'modbus-rtu': createModbusRtuDriver,
  'modbus-tcp': createModbusTcpDriver,
};
