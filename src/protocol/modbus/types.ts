/**
 * The Modbus point block as the protocol code sees it. Structurally the same as the config's
 * ModbusPointBlock (src/config/types.ts), declared here so protocol/ depends on no other room.
 */
export type ModbusTable = 'coil' | 'discrete' | 'input' | 'holding';
export type ModbusDataType = 'bool' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float32' | 'float64' | 'string';

export interface ModbusBlock {
  table: ModbusTable;
  /** 0-based wire address. */
  address: number;
  data_type: ModbusDataType;
  /** Registers, for `string`. */
  length?: number;
  /** Bit within the register value (0 = least significant); 0..31 in 32-bit values. */
  bit?: number;
  /** Width of the bit field starting at `bit` (default 1). */
  bits?: number;
  word_order: 'big' | 'little';
  byte_order: 'big' | 'little';
}
