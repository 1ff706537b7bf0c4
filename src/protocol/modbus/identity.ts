/**
 * What a Modbus server says about itself, on bytes: Read Device Identification (FC 43 / MEI 14, Modbus
 * Application Protocol v1.1b3 §6.21) and Report Server ID (FC 17, §6.13). Pure. Both answers are free-form
 * beyond their headers, so the parsers check every length against the PDU and refuse what does not fit.
 */

/** FC 43/14's basic objects (§6.21): the three every conforming server has. */
export const DEVICE_ID_OBJECTS = { vendorName: 0, productCode: 1, revision: 2, vendorUrl: 3, productName: 4, modelName: 5 } as const;

/** The request PDU for FC 43/14: `code` 1 basic stream, 2 regular, 3 extended, 4 one object (`objectId`). */
export function deviceIdRequest(code: 1 | 2 | 3 | 4 = 1, objectId = 0): Uint8Array {
  return Uint8Array.of(0x2b, 0x0e, code, objectId);
}

/** The request PDU for FC 17 (no data). */
export const serverIdRequest = (): Uint8Array => Uint8Array.of(0x11);

export interface DeviceIdAnswer {
  conformity: number;
  /** More objects follow in another request, from `nextObject`. */
  more: boolean;
  nextObject: number;
  /** Object id → its text (ASCII as the spec says; other bytes kept as Latin-1). */
  objects: Record<number, string>;
}

const text = (bytes: Uint8Array): string => String.fromCharCode(...bytes).replace(/\0+$/, '').trim();

/** An FC 43/14 answer PDU (function code first); a string saying what is wrong when it is not one. */
export function parseDeviceId(pdu: Uint8Array): DeviceIdAnswer | string {
  if (pdu[0] !== 0x2b || pdu[1] !== 0x0e) return 'not a read device identification answer';
  if (pdu.length < 7) return `a device identification answer of ${pdu.length} bytes (the header alone is 7)`;
  const count = pdu[6]!;
  const objects: Record<number, string> = {};
  let at = 7;
  for (let k = 0; k < count; k++) {
    if (at + 2 > pdu.length) return `object ${k + 1} of ${count} is missing`;
    const id = pdu[at]!;
    const length = pdu[at + 1]!;
    if (at + 2 + length > pdu.length) return `object ${id} says ${length} bytes, the answer holds ${pdu.length - at - 2}`;
    objects[id] = text(pdu.subarray(at + 2, at + 2 + length));
    at += 2 + length;
  }
  if (at !== pdu.length) return `${pdu.length - at} bytes after the last object`;
  return { conformity: pdu[3]!, more: pdu[4] === 0xff, nextObject: pdu[5]!, objects };
}

export interface ServerIdAnswer {
  /** The first data byte: the start of a server id whose length and meaning are the vendor's. */
  serverId: number;
  /**
   * The data's printable runs, joined by a space: the spec's server id (device specific length), run
   * indicator (0x00/0xFF) and additional data cannot be told apart without the vendor's layout, and the
   * text is what names a model ("Pymodbus\xff" is text then the run indicator).
   */
  text: string;
  bytes: Uint8Array;
}

/** An FC 17 answer PDU (function code first); a string saying what is wrong when it is not one. */
export function parseServerId(pdu: Uint8Array): ServerIdAnswer | string {
  if (pdu[0] !== 0x11) return 'not a report server id answer';
  if (pdu.length < 3) return 'a report server id answer without data';
  const count = pdu[1]!;
  if (pdu.length !== 2 + count) return `byte count ${count}, the answer holds ${pdu.length - 2}`;
  const data = pdu.subarray(2);
  const runs = String.fromCharCode(...data).split(/[^\x20-\x7e]+/).map((r) => r.trim()).filter((r) => r.length >= 2);
  return { serverId: data[0]!, text: runs.join(' '), bytes: data.slice() };
}

/** SunSpec's marker "SunS" as two registers (SunSpec Information Model Reference: 0x53756e53). */
export const SUNSPEC_MARKER = [0x5375, 0x6e53] as const;
