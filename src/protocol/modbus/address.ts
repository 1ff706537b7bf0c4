/**
 * Modbus reference notation. Manuals print 1-based references with a table prefix: 00001 coils,
 * 10001 discrete inputs, 30001 input registers, 40001 holding registers (5 digits), or the 6-digit
 * form (400001) for addresses above 9998. The wire carries the 0-based address.
 */
import type { ModbusTable } from './types.js';

export type { ModbusTable } from './types.js';

const PREFIX_TABLE: Record<string, ModbusTable> = { '0': 'coil', '1': 'discrete', '3': 'input', '4': 'holding' };

export interface ParsedReference {
  table: ModbusTable;
  address: number;
}

/** Parses "40001" / "400001" / "30010"; returns an error text for anything else. The one reference parser. */
export function parseReference(ref: string): ParsedReference | string {
  const text = ref.trim();
  if (!/^[0134]\d{4,5}$/.test(text)) {
    return `invalid modbus reference "${ref}" (expected 5 or 6 digits starting with 0, 1, 3 or 4, e.g. 40001)`;
  }
  const table = PREFIX_TABLE[text[0]!]!;
  const digits = text.slice(1);
  const index = Number(digits);
  // The config's problem texts come from here (config/model-checks.ts): they say what the valid range is.
  if (index < 1) return `reference "${ref}" is out of range (numbering starts at ${text[0]}${'0'.repeat(digits.length - 1)}1)`;
  if (index > 65536) return `reference "${ref}" is out of range (the highest is ${text[0]}65536)`;
  return { table, address: index - 1 };
}

/**
 * Hex text ("0x0156") is the 0-based wire address as Eastron and PZEM manuals print it — taken as written,
 * so nobody converts by hand (where copy errors come from). Null when the text is not hex.
 */
export function parseHexAddress(text: string): number | null {
  return /^0[xX][0-9a-fA-F]{1,4}$/.test(text.trim()) ? Number.parseInt(text.trim().slice(2), 16) : null;
}

/**
 * Resolves a point's `address` (0-based number or reference string) against its declared table; a
 * reference whose prefix names another table is refused, since that is almost always a copy error.
 */
export function resolveAddress(address: number | string, table: ModbusTable): number | string {
  if (typeof address === 'number') {
    if (!Number.isInteger(address) || address < 0 || address > 65535) {
      return `address ${address} is out of range (0..65535)`;
    }
    return address;
  }
  if (/^\d+$/.test(address) && address.length < 5) return resolveAddress(Number(address), table);
  const hex = parseHexAddress(address);
  if (hex !== null) return hex;
  const parsed = parseReference(address);
  if (typeof parsed === 'string') return parsed;
  if (parsed.table !== table) return `reference "${address}" is in the ${parsed.table} table, but the point says ${table}`;
  return parsed.address;
}

/** The 1-based reference for docs and the CLI: holding 0 → "40001". */
export function formatReference(table: ModbusTable, address: number): string {
  const prefix = { coil: '0', discrete: '1', input: '3', holding: '4' }[table];
  const index = address + 1;
  return index <= 9999 ? `${prefix}${String(index).padStart(4, '0')}` : `${prefix}${String(index).padStart(5, '0')}`;
}
