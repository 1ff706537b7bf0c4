/**
 * The one check of a Modbus point block (config models, the CLI's flags): every rule the schema cannot
 * express, each problem tied to the block key it is about, so the config loader can name its full path.
 */
import { isBitTable, pointWidth } from './codec.js';
import type { ModbusBlock } from './types.js';

export interface BlockProblem {
  key: 'address' | 'data_type' | 'bit' | 'bits' | 'length';
  message: string;
}

type CheckedBlock = Pick<ModbusBlock, 'table' | 'data_type'> & Partial<Pick<ModbusBlock, 'length' | 'bit' | 'bits'>> & { address?: unknown };

/** Problems of one block; `pointType` is the point's type (int, float, string) when known. */
export function blockProblems(block: CheckedBlock, pointType?: string): BlockProblem[] {
  const out: BlockProblem[] = [];
  const dt = block.data_type;
  const add = (key: BlockProblem['key'], message: string): void => void out.push({ key, message });
  if (pointType !== undefined && (dt === 'string') !== (pointType === 'string')) {
    add('data_type', `data_type "${dt}" does not fit point type "${pointType}" (string goes only with string)`);
  }
  if (dt === 'bool' && pointType === 'float') add('data_type', 'data_type "bool" needs point type "int" (reads as 0/1)');
  if (isBitTable(block.table) && dt !== 'bool') add('data_type', `a ${block.table} holds one bit: data_type must be "bool" (got "${dt}")`);
  if (block.bits !== undefined && block.bit === undefined) add('bits', 'needs bit (where the field starts)');
  if (block.bit !== undefined) {
    // Bit fields live in 16-bit registers and, read-only, in 32-bit ones (status words of inverters and meters).
    const size = dt === 'int16' || dt === 'uint16' ? 16 : dt === 'int32' || dt === 'uint32' ? 32 : 0;
    const bits = block.bits ?? 1;
    if (isBitTable(block.table)) add('bit', `bit is only for register tables, not ${block.table}`);
    else if (size === 0) add('bit', `bit is only for data_type int16, uint16, int32 or uint32 (got "${dt}")`);
    else if (!Number.isInteger(block.bit) || block.bit < 0 || block.bit >= size) add('bit', `bit ${block.bit} is out of range (0..${size - 1})`);
    else if (!Number.isInteger(bits) || bits < 1 || block.bit + bits > size) add('bits', `bits ${bits} from bit ${block.bit} run past the ${size}-bit value`);
  }
  if (dt === 'string') {
    if (block.length === undefined) add('length', 'is required for data_type "string"');
    else if (!Number.isInteger(block.length) || block.length < 1 || block.length > 125) add('length', `${block.length} is out of range (1..125 registers)`);
  } else if (block.length !== undefined) {
    add('length', 'is only for data_type "string"');
  }
  if (typeof block.address === 'number' && out.every((p) => p.key !== 'length')) {
    const last = block.address + pointWidth(block as Parameters<typeof pointWidth>[0]) - 1;
    if (last > 65535) add('address', `the value would end at address ${last}, beyond 65535`);
  }
  return out;
}
