/** modbus-tcp: Modbus TCP to a PLC or an RS-485/TCP gateway, DESIGN §6. */
import type { BusConfig, ResolvedDevice } from '../config/types.js';
import { createModbusDriver, type ModbusTuning } from './modbus/driver.js';
import { modbusLink } from './modbus/link.js';
import type { Driver, DriverContext, DriverFactory } from './types.js';

export function createModbusTcpDriverWith(bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext, tuning?: ModbusTuning): Driver {
  return createModbusDriver({ bus, devices, ctx, tuning, ...modbusLink(bus) });
}

export const createModbusTcpDriver: DriverFactory = (bus, devices, ctx) => createModbusTcpDriverWith(bus, devices, ctx);
