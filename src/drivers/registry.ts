/** Driver name → factory. The only place that knows every driver; used by the composition root. */
import { createGpioDriver } from './gpio.js';
import { createSimulatorDriver } from './simulator.js';
import type { DriverFactory } from './types.js';

export const driverFactories: Partial<Record<string, DriverFactory>> = {
  simulator: createSimulatorDriver,
  gpio: createGpioDriver,
};
