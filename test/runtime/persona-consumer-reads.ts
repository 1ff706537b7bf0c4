/**
 * What each known consumer of a persona model reads, and how it decodes the words, written from the consumer's
 * own source (not from our models), so a test can read a persona as the consumer does and see what it would see.
 * Addresses are PDU addresses (0-based). Sources (snapshots read for ../shared/notes/model-audit-3.md and again
 * for this table):
 * - Victron GX: victronenergy/dbus-modbus-client `carlo_gavazzi.py`, `register.py` (Reg_s32l: '<i' from '<2H',
 *   the low word first; Reg_u16; Reg_ver one register; Reg_text(0x5000, 7)).
 * - WARP: Tinkerforge/evse-v2-bricklet `software/src/sdm.c` (16a7ac4): `sdm_registers_to_read` and
 *   `sdm_registers_fast_to_read` (register numbers, sent as number − 1, 2 registers each, FC04, the 4 bytes as
 *   a big-endian float), the meter code at holding 64515 (FC03, 1 register) and the system type at holding 11
 *   (FC03, 2 registers, a float), unit 1.
 * - mbmd: volkszaehler/mbmd (fb8f9c2) `meters/rs485/sdm.go`, `sdm120.go`, `sdm230.go` (FC04, 2 registers,
 *   RTUIeee754ToFloat64) and `dtsu666.go` (FC03, a float divided by 10, 1000, 100 or 1).
 * - Victron's meter library: M-o-a-T/victron-meter-library (88ac937) `Eastron_SDM120.py`, `Eastron_SDM630v2.py` probe
 *   the meter code at FC02h with the handler's default access, input registers (FC04): 32 an SDM120, 112 an SDM630.
 * - Solax: odig/Solax-DTSU666-Emulator `src/dtsu666.h` (a9ff0da): what the inverter is served, FC03 floats in the
 *   DTSU666's units, the meter type 166 at 000Bh.
 * - SMA Data Manager: the mandatory points of SunSpec models 1, 203 and 213 (sunspec/models 7abdf89
 *   `json/model_1.json`, `model_203.json`, `model_213.json`), found by walking the chain from 40000.
 */

export type Decode = 'f32' | 's32l' | 'u16' | 'text';

export interface ConsumerRead {
  fc: 3 | 4;
  address: number;
  count: number;
  decode: Decode;
  /** The consumer divides the decoded number by this (the meter's fixed units). */
  divisor: number;
  /** What the consumer must see when the persona has no model point there: a constant, or any number. */
  expect?: number | readonly number[];
}

const float = (fc: 3 | 4, address: number, divisor = 1): ConsumerRead => ({ fc, address, count: 2, decode: 'f32', divisor });

/** WARP's register numbers (sdm.c), each read as 2 input registers from number − 1. */
const WARP_INPUT = [
  1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 47, 49, 53, 57, 61, 63, 67, 71, 73,
  75, 77, 79, 81, 83, 85, 87, 101, 103, 105, 107, 201, 203, 205, 207, 225, 235, 237, 239, 241, 243, 245, 249, 251,
  259, 261, 263, 265, 267, 269, 335, 337, 339, 341, 343, 345, 347, 349, 351, 353, 355, 357, 359, 361, 363, 365, 367,
  369, 371, 373, 375, 377, 379, 381,
];

/** mbmd's SDM producer: the SDM630 opcodes, all of them read on every cycle. */
const MBMD_SDM630 = [
  0x0000, 0x0002, 0x0004, 0x0006, 0x0008, 0x000a, 0x000c, 0x000e, 0x0010, 0x0012, 0x0014, 0x0016, 0x0018, 0x001a,
  0x001c, 0x001e, 0x0020, 0x0022, 0x0034, 0x0038, 0x003c, 0x003e, 0x0042, 0x0046, 0x0048, 0x004a, 0x004c, 0x004e,
  0x00ea, 0x00ec, 0x00ee, 0x00f8, 0x0156, 0x0158, 0x015a, 0x015c, 0x015e, 0x0160, 0x0162, 0x0164, 0x0166, 0x0168,
  0x016a, 0x016c, 0x016e, 0x0170, 0x0172, 0x0174, 0x0176, 0x0178, 0x017a, 0x017c,
];
const MBMD_SDM120 = [0x0000, 0x0006, 0x000c, 0x0012, 0x0018, 0x001e, 0x0046, 0x0048, 0x004a, 0x004c, 0x004e, 0x0156, 0x0158];
const MBMD_SDM230 = [0x0000, 0x0006, 0x000c, 0x0012, 0x0018, 0x001e, 0x0024, 0x0046, 0x0048, 0x004a, 0x004c, 0x004e, 0x0156, 0x0158];

/** mbmd's DTSU666 producer: opcode and divisor. */
const MBMD_DTSU666: [number, number][] = [
  [0x2006, 10], [0x2008, 10], [0x200a, 10], [0x2012, 10], [0x2014, 10], [0x2016, 10], [0x2018, 10],
  [0x201a, 10], [0x201c, 10], [0x201e, 10], [0x2020, 10],
  [0x200c, 1000], [0x200e, 1000], [0x2010, 1000], [0x202a, 1000], [0x202c, 1000], [0x202e, 1000], [0x2030, 1000],
  [0x2044, 100],
  [0x101e, 1], [0x1020, 1], [0x1022, 1], [0x1024, 1], [0x1028, 1], [0x102a, 1], [0x102c, 1], [0x102e, 1],
];

/** The Solax emulator's table: line and phase voltages, currents, powers, reactive powers, PF, frequency, energies. */
const SOLAX_DTSU666: [number, number][] = [
  [0x2000, 10], [0x2002, 10], [0x2004, 10], [0x2006, 10], [0x2008, 10], [0x200a, 10],
  [0x200c, 1000], [0x200e, 1000], [0x2010, 1000],
  [0x2012, 10], [0x2014, 10], [0x2016, 10], [0x2018, 10], [0x201a, 10], [0x201c, 10], [0x201e, 10], [0x2020, 10],
  [0x202a, 1000], [0x202c, 1000], [0x202e, 1000], [0x2030, 1000], [0x2044, 100], [0x101e, 1], [0x1028, 1],
];

/** Per persona model: each consumer (named as in the model's `persona.consumers`) and its reads. */
export const CONSUMER_READS: Record<string, Record<string, ConsumerRead[]>> = {
  'carlo-gavazzi-em24': {
    'Victron GX': [
      { fc: 3, address: 0x000b, count: 1, decode: 'u16', divisor: 1, expect: [1648, 1649, 1650, 1651, 1652, 1653] },
      ...[0x0000, 0x0002, 0x0004, 0x0012, 0x0014, 0x0016, 0x0028, 0x0034, 0x0040, 0x0042, 0x0044, 0x004e]
        .map((address): ConsumerRead => ({ fc: 3, address, count: 2, decode: 's32l', divisor: 10 })),
      ...[0x000c, 0x000e, 0x0010].map((address): ConsumerRead => ({ fc: 3, address, count: 2, decode: 's32l', divisor: 1000 })),
      { fc: 3, address: 0x0032, count: 1, decode: 'u16', divisor: 1, expect: [0, 0xffff] },
      { fc: 3, address: 0x0033, count: 1, decode: 'u16', divisor: 10 },
      { fc: 3, address: 0x0302, count: 1, decode: 'u16', divisor: 1 },
      { fc: 3, address: 0x0304, count: 1, decode: 'u16', divisor: 1 },
      { fc: 3, address: 0x1002, count: 1, decode: 'u16', divisor: 1, expect: [0, 1, 2, 3, 4] },
      { fc: 3, address: 0x5000, count: 7, decode: 'text', divisor: 1 },
      { fc: 3, address: 0xa000, count: 1, decode: 'u16', divisor: 1, expect: 7 },
      { fc: 3, address: 0xa100, count: 1, decode: 'u16', divisor: 1, expect: [0, 1, 2, 3] },
    ],
  },
  'eastron-sdm630': {
    'Tinkerforge WARP': [
      { fc: 3, address: 64514, count: 1, decode: 'u16', divisor: 1, expect: 0x0070 },
      { fc: 3, address: 10, count: 2, decode: 'f32', divisor: 1, expect: 3 },
      ...WARP_INPUT.map((n) => float(4, n - 1)),
    ],
    mbmd: MBMD_SDM630.map((a) => float(4, a)),
    'Victron meter library': [{ fc: 4, address: 0xfc02, count: 1, decode: 'u16', divisor: 1, expect: 112 }],
  },
  'eastron-sdm120': {
    mbmd: MBMD_SDM120.map((a) => float(4, a)),
    'Victron meter library': [{ fc: 4, address: 0xfc02, count: 1, decode: 'u16', divisor: 1, expect: 32 }],
  },
  'eastron-sdm230': { mbmd: MBMD_SDM230.map((a) => float(4, a)) },
  'chint-dtsu666': {
    Solax: [{ fc: 3, address: 0x000b, count: 1, decode: 'u16', divisor: 1, expect: 166 }, ...SOLAX_DTSU666.map(([a, d]) => float(3, a, d))],
    mbmd: MBMD_DTSU666.map(([a, d]) => float(3, a, d)),
  },
};

/** The consumer's number (or text) from the words it got. */
export function decode(words: readonly number[], how: Decode, divisor: number): number | string {
  if (how === 'text') return Buffer.from(words.flatMap((w) => [w >> 8, w & 0xff])).toString('latin1').replace(/[\0 ]+$/, '');
  const b = Buffer.alloc(4);
  if (how === 'u16') return words[0]! / divisor;
  if (how === 's32l') {
    b.writeUInt16LE(words[0]!, 0);
    b.writeUInt16LE(words[1]!, 2);
    return b.readInt32LE(0) / divisor;
  }
  b.writeUInt16BE(words[0]!, 0);
  b.writeUInt16BE(words[1]!, 2);
  return b.readFloatBE(0) / divisor;
}

/** SunSpec offsets from a model's ID register of the points SMA's Data Manager needs (mandatory), with their scale factor. */
export const SUNSPEC_MANDATORY: Record<number, [name: string, offset: number, type: 'int16' | 'acc32' | 'float32' | 'bitfield32', sf?: string][]> = {
  203: [
    ['A', 2, 'int16', 'A_SF'], ['AphA', 3, 'int16', 'A_SF'], ['AphB', 4, 'int16', 'A_SF'], ['AphC', 5, 'int16', 'A_SF'],
    ['PhV', 7, 'int16', 'V_SF'], ['PhVphA', 8, 'int16', 'V_SF'], ['PhVphB', 9, 'int16', 'V_SF'], ['PhVphC', 10, 'int16', 'V_SF'],
    ['PPV', 11, 'int16', 'V_SF'], ['PhVphAB', 12, 'int16', 'V_SF'], ['PhVphBC', 13, 'int16', 'V_SF'], ['PhVphCA', 14, 'int16', 'V_SF'],
    ['Hz', 16, 'int16', 'Hz_SF'], ['W', 18, 'int16', 'W_SF'], ['TotWhExp', 38, 'acc32', 'TotWh_SF'], ['TotWhImp', 46, 'acc32', 'TotWh_SF'],
    ['Evt', 105, 'bitfield32'],
  ],
  213: [
    ['A', 2, 'float32'], ['AphA', 4, 'float32'], ['AphB', 6, 'float32'], ['AphC', 8, 'float32'],
    ['PhV', 10, 'float32'], ['PhVphA', 12, 'float32'], ['PhVphB', 14, 'float32'], ['PhVphC', 16, 'float32'],
    ['PPV', 18, 'float32'], ['PPVphAB', 20, 'float32'], ['PPVphBC', 22, 'float32'], ['PPVphCA', 24, 'float32'],
    ['Hz', 26, 'float32'], ['W', 28, 'float32'], ['TotWhExp', 60, 'float32'], ['TotWhImp', 68, 'float32'], ['Evt', 124, 'bitfield32'],
  ],
};

/** Scale factors by their offset in model 203. */
export const SUNSPEC_203_SF: Record<string, number> = { A_SF: 6, V_SF: 15, Hz_SF: 17, W_SF: 22, TotWh_SF: 54 };

/** SunSpec point names → the persona models' point names (203; the float model's are `float_` + these). */
export const SUNSPEC_NAMES: Record<string, string> = {
  A: 'current', AphA: 'current_a', AphB: 'current_b', AphC: 'current_c', PhV: 'voltage_ln', PhVphA: 'voltage_an',
  PhVphB: 'voltage_bn', PhVphC: 'voltage_cn', PPV: 'voltage_ll', PhVphAB: 'voltage_ab', PhVphBC: 'voltage_bc',
  PhVphCA: 'voltage_ca', PPVphAB: 'voltage_ab', PPVphBC: 'voltage_bc', PPVphCA: 'voltage_ca', Hz: 'frequency',
  W: 'power', TotWhExp: 'export_energy', TotWhImp: 'import_energy', Evt: 'events',
};
