/** modbus-rtu: Modbus RTU over a serial port (RS-485 HAT or USB adapter), DESIGN §6. */
import type { BusConfig, ResolvedDevice } from '../config/types.js';
import { createModbusDriver, type ModbusTuning } from './modbus/driver.js';
import { modbusLink } from './modbus/link.js';
import type { Driver, DriverContext, DriverFactory } from './types.js';

export function createModbusRtuDriverWith(bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext, tuning?: ModbusTuning): Driver {
  return createModbusDriver({ bus, devices, ctx, tuning, ...modbusLink(bus) });
}

export const createModbusRtuDriver: DriverFactory = (bus, devices, ctx) => createModbusRtuDriverWith(bus, devices, ctx);
