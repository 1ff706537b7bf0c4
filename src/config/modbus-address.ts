/**
 * Modbus reference notation ("40001" = holding register 0): the 1-based numbering of device manuals, which
 * integrators copy straight into configs. The first digit names the table, the rest is address + 1.
 */
export type ModbusTable = 'coil' | 'discrete' | 'input' | 'holding';

const TABLE_BY_DIGIT: Record<string, ModbusTable> = { '0': 'coil', '1': 'discrete', '3': 'input', '4': 'holding' };

export interface ModbusReference {
  table: ModbusTable;
  /** 0-based protocol address. */
  address: number;
}

/** Parses "40001" / "400001" style text; returns an error message instead of throwing (config problems are collected). */
export function parseModbusReference(text: string): ModbusReference | { error: string } {
  const match = /^([0134])(\d{4,5})$/.exec(text);
  if (!match) return { error: `"${text}" is not reference notation (like "40001", "30001", "10001", "00001" or "400001")` };
  const table = TABLE_BY_DIGIT[match[1]!]!;
  const number = Number(match[2]);
  if (number < 1) return { error: `reference "${text}" is out of range (numbering starts at ${match[1]}${'0'.repeat(match[2]!.length - 1)}1)` };
  if (number > 65536) return { error: `reference "${text}" is out of range (the highest is ${match[1]}65536)` };
  return { table, address: number - 1 };
}

/** Registers a value of this data type occupies (bits count as one slot of the coil/discrete table). */
export function registerWidth(dataType: string, length: number | undefined): number {
  switch (dataType) {
    case 'int32':
    case 'uint32':
    case 'float32':
      return 2;
    case 'int64':
    case 'uint64':
    case 'float64':
      return 4;
    case 'string':
      return length ?? 1;
    default:
      return 1;
  }
}
