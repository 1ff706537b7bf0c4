/**
 * Register codec: raw register words / bits <-> point values, for every data type, word order and
 * byte order of DESIGN §2. Pure; the drivers hand it what came off the wire.
 *
 * Conventions (the Modbus spec only defines 16-bit big-endian registers; the rest is vendor practice):
 * - byte_order swaps the two bytes inside each register ("little" = low byte first);
 * - word_order orders the registers of a multi-register value ("big" = most significant word first,
 *   as Eastron and most meters do; "little" = low word first, common on PLCs and some Chinese meters);
 * - strings are packed two characters per register, first character in the high byte; word_order
 *   does not apply to them, byte_order does (some devices store "BA" for "AB").
 */
import type { ModbusBlock as ModbusPointBlock } from './types.js';
import { invalidValue } from '../../core/errors.js';

export type RawPointValue = number | string | boolean;
type Block = Pick<ModbusPointBlock, 'table' | 'data_type' | 'word_order' | 'byte_order'> &
  Partial<Pick<ModbusPointBlock, 'length' | 'bit' | 'bits'>>;

const WORDS: Record<ModbusPointBlock['data_type'], number> = {
  bool: 1, int16: 1, uint16: 1, int32: 2, uint32: 2, int64: 4, uint64: 4, float32: 2, float64: 4, string: 1,
};

export const isBitTable = (table: ModbusPointBlock['table']): boolean => table === 'coil' || table === 'discrete';
export const isWritableTable = (table: ModbusPointBlock['table']): boolean => table === 'coil' || table === 'holding';

/** Registers (or bits, for coil/discrete) that one point occupies. */
export function pointWidth(block: Block): number {
  if (isBitTable(block.table)) return 1;
  if (block.data_type === 'string') return block.length ?? 1;
  return WORDS[block.data_type];
}

/** Bytes of the value in big-endian order after undoing the device's byte and word order. */
function canonicalBytes(words: readonly number[], block: Block): Uint8Array {
  const ordered = block.word_order === 'little' ? [...words].reverse() : words;
  const bytes = new Uint8Array(ordered.length * 2);
  ordered.forEach((word, i) => {
    const hi = (word >> 8) & 0xff;
    const lo = word & 0xff;
    bytes[i * 2] = block.byte_order === 'little' ? lo : hi;
    bytes[i * 2 + 1] = block.byte_order === 'little' ? hi : lo;
  });
  return bytes;
}

/** Inverse of canonicalBytes: big-endian value bytes -> register words in the device's order (also personas' sentinels). */
export function deviceWords(bytes: Uint8Array, block: Pick<Block, 'word_order' | 'byte_order'>): number[] {
  const words: number[] = [];
  for (let i = 0; i < bytes.length; i += 2) {
    const hi = bytes[i]!;
    const lo = bytes[i + 1]!;
    words.push(block.byte_order === 'little' ? (lo << 8) | hi : (hi << 8) | lo);
  }
  return block.word_order === 'little' ? words.reverse() : words;
}

/** A numeric point's bytes, big-endian, after undoing the device's orders: one view for every decode (≤ 4 registers). */
const numeric = new DataView(new ArrayBuffer(8));

/**
 * Decodes one point from registers read starting at `regs[offset]`. Bits (coil/discrete, `bit`,
 * data_type bool) come back as 0/1 numbers: the shadow holds numbers for int points (DESIGN §2).
 * Numbers are decoded in one shared view: a poll allocates nothing per point but the value.
 */
export function decodeRegisters(block: Block, regs: ArrayLike<number>, offset: number): RawPointValue {
  const width = pointWidth(block);
  for (let i = 0; i < width; i++) {
    if (regs[offset + i] === undefined) throw new Error(`response too short: needed register ${offset + i}`);
  }
  if (block.data_type === 'string') {
    const words: number[] = [];
    for (let i = 0; i < width; i++) words.push(regs[offset + i]! & 0xffff);
    return decodeString(words, block);
  }
  const wordsReversed = block.word_order === 'little';
  const bytesSwapped = block.byte_order === 'little';
  for (let i = 0; i < width; i++) {
    const word = regs[offset + (wordsReversed ? width - 1 - i : i)]! & 0xffff;
    numeric.setUint16(i * 2, bytesSwapped ? ((word & 0xff) << 8) | (word >> 8) : word);
  }
  const view = numeric;
  if (block.bit !== undefined) return bitField(width === 1 ? view.getUint16(0) : view.getUint32(0), block.bit, block.bits ?? 1);
  switch (block.data_type) {
    case 'bool': return view.getUint16(0) !== 0 ? 1 : 0;
    case 'int16': return view.getInt16(0);
    case 'uint16': return view.getUint16(0);
    case 'int32': return view.getInt32(0);
    case 'uint32': return view.getUint32(0);
    // 64-bit values past 2^53 lose low digits in a JS number; energy counters never get there.
    case 'int64': return Number(view.getBigInt64(0));
    case 'uint64': return Number(view.getBigUint64(0));
    case 'float32': return view.getFloat32(0);
    case 'float64': return view.getFloat64(0);
  }
}

/** `bits` bits of `value` from bit `bit` up (0 = least significant), unsigned. */
function bitField(value: number, bit: number, bits: number): number {
  const shifted = value >>> bit;
  return bits >= 32 ? shifted : (shifted & (2 ** bits - 1)) >>> 0;
}

function decodeString(words: readonly number[], block: Block): string {
  const bytes = canonicalBytes(words, { ...block, word_order: 'big' });
  let end = bytes.length;
  // Devices pad with NUL or spaces; a NUL also ends the text early.
  const nul = bytes.indexOf(0);
  if (nul >= 0) end = nul;
  let text = '';
  for (let i = 0; i < end; i++) text += String.fromCharCode(bytes[i]!);
  return text.replace(/\s+$/, '');
}

/** A coil/discrete bit as the shadow wants it. */
export const decodeBit = (bit: boolean | number): number => (bit ? 1 : 0);

function toNumber(value: RawPointValue, name: string): number {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number') return value;
  const n = Number(value.trim());
  if (value.trim() === '' || !Number.isFinite(n)) throw invalidValue(`value "${value}" is not a number for point ${name}`);
  return n;
}

/**
 * An integer for an integer register. Inverse scaling (value / scale) leaves float noise like
 * 234.99999999997, so values within 1e-6 of an integer are rounded; anything else is refused
 * rather than silently truncated.
 */
function toInteger(value: RawPointValue, name: string, type: string): number {
  const n = toNumber(value, name);
  if (!Number.isFinite(n)) throw invalidValue(`value ${n} is not a finite number for point ${name}`);
  const rounded = Math.round(n);
  if (Math.abs(n - rounded) > 1e-6) throw invalidValue(`value ${n} is not an integer; point ${name} is ${type}`);
  return rounded === 0 ? 0 : rounded; // no -0
}

const INT_RANGE: Record<string, [number, number]> = {
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  int64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

function checkRange(n: number, type: string, name: string): void {
  const [min, max] = INT_RANGE[type]!;
  if (n < min || n > max) throw invalidValue(`value ${n} does not fit ${type} (${min}..${max}) for point ${name}`);
}

/**
 * Encodes a raw value into the register words to write (device order). Throws INVALID_VALUE when the
 * value does not fit, so nothing is sent. Points with `bit` are written by read-modify-write
 * (see applyBit); here they encode to the bit value 0/1 in a single word.
 */
export function encodeRegisters(block: Block, value: RawPointValue, name: string): number[] {
  if (block.table !== 'holding') throw invalidValue(`point ${name} is in the ${block.table} table, which cannot be written`);
  if (block.data_type === 'string') return encodeString(block, value, name);
  if (block.bit !== undefined && WORDS[block.data_type] !== 1) {
    // A read-modify-write of two registers is not atomic on the device; such flags are status bits anyway.
    throw invalidValue(`point ${name} is a bit field in a 32-bit register, which is read-only`);
  }
  if ((block.bit !== undefined && (block.bits ?? 1) > 1)) {
    const field = toInteger(value, name, 'a bit field');
    const max = 2 ** block.bits! - 1;
    if (field < 0 || field > max) throw invalidValue(`value ${field} does not fit ${block.bits} bits (0..${max}) for point ${name}`);
    return [field];
  }
  if (block.bit !== undefined || block.data_type === 'bool') {
    const bit = toInteger(value, name, 'a bit');
    if (bit !== 0 && bit !== 1) throw invalidValue(`value ${bit} is not 0 or 1 for bit point ${name}`);
    return [bit];
  }
  const bytes = new Uint8Array(WORDS[block.data_type] * 2);
  const view = new DataView(bytes.buffer);
  if (block.data_type === 'float32' || block.data_type === 'float64') {
    const n = toNumber(value, name);
    if (!Number.isFinite(n)) throw invalidValue(`value ${n} is not a finite number for point ${name}`);
    if (block.data_type === 'float32') {
      if (Math.abs(n) > 3.4028234663852886e38) throw invalidValue(`value ${n} does not fit float32 for point ${name}`);
      view.setFloat32(0, n);
    } else {
      view.setFloat64(0, n);
    }
  } else {
    const n = toInteger(value, name, block.data_type);
    checkRange(n, block.data_type, name);
    switch (block.data_type) {
      case 'int16': view.setInt16(0, n); break;
      case 'uint16': view.setUint16(0, n); break;
      case 'int32': view.setInt32(0, n); break;
      case 'uint32': view.setUint32(0, n); break;
      case 'int64': view.setBigInt64(0, BigInt(n)); break;
      case 'uint64': view.setBigUint64(0, BigInt(n)); break;
    }
  }
  return deviceWords(bytes, block);
}

function encodeString(block: Block, value: RawPointValue, name: string): number[] {
  const text = String(value);
  const capacity = (block.length ?? 1) * 2;
  if (text.length > capacity) throw invalidValue(`text of ${text.length} characters does not fit ${capacity} for point ${name}`);
  const bytes = new Uint8Array(capacity);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0xff) throw invalidValue(`character "${text[i]}" cannot be stored in a register for point ${name}`);
    bytes[i] = code;
  }
  return deviceWords(bytes, { ...block, word_order: 'big' });
}

/** A coil value: 0/1, true/false, "0"/"1" — anything else is refused. */
export function encodeBit(value: RawPointValue, name: string): boolean {
  if (typeof value === 'boolean') return value;
  const n = toInteger(value, name, 'a coil');
  if (n !== 0 && n !== 1) throw invalidValue(`value ${n} is not 0 or 1 for coil point ${name}`);
  return n === 1;
}

/** Puts a bit field's value into a register word in device byte order (read-modify-write of `bit` points). */
export function applyBit(word: number, block: Block, fieldValue: number): number {
  const swap = block.byte_order === 'little';
  const logical = swap ? ((word & 0xff) << 8) | (word >> 8) : word;
  const shift = block.bit ?? 0;
  const mask = ((2 ** (block.bits ?? 1) - 1) << shift) & 0xffff;
  const next = ((logical & ~mask) | ((fieldValue << shift) & mask)) & 0xffff;
  return swap ? ((next & 0xff) << 8) | (next >> 8) : next;
}
