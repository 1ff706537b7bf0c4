/**
 * The reads the doctor makes of one unit that answered: what identifies it (device identification, server
 * id, SunSpec's marker and models, Eastron's meter code) and register spans for scoring models, each span
 * read once however many models ask for it. Every read is a short one: a unit that does not support a
 * function often stays silent, and the doctor waits for it only as long as the answer would take.
 */
import { decodeAnswer, encodeRequest } from '../../../protocol/modbus/client-pdu.js';
import { deviceIdRequest, parseDeviceId, parseServerId, serverIdRequest, SUNSPEC_MARKER } from '../../../protocol/modbus/identity.js';
import type { DoctorIo } from '../../../protocol/modbus/doctor-types.js';

export type ReadFc = 1 | 2 | 3 | 4;
export type SpanRead = { ok: true; data: number[] } | { ok: false; why: string };

/** What the unit says about itself; null where it said nothing (or no such thing). */
export interface UnitIdentity {
  /** FC 43/14 basic objects: vendor, product code, revision. */
  deviceId: Record<number, string> | null;
  /** FC 17's printable text. */
  serverId: string | null;
  /** SunSpec: where "SunS" is and the model ids of its chain, common model's manufacturer and model. */
  sunspec: { base: number; models: number[]; manufacturer: string; model: string } | null;
  /** Eastron meter code at holding FC02h. */
  eastronCode: number | null;
}

/** Where SunSpec devices put "SunS" (SunSpec Modbus spec: 40000 first, then 0 and 50000). */
const SUNSPEC_BASES = [40000, 0, 50000];
/** Eastron's meter code register (holding FC02h) and the codes consumers read there (Tinkerforge evse-v2 sdm.c). */
export const EASTRON_CODE_ADDRESS = 0xfc02;
export const EASTRON_CODES: Readonly<Record<number, string>> = {
  0x0070: 'eastron-sdm630', 0x0020: 'eastron-sdm120', 0x0089: 'eastron-sdm72d-m-2', 0x0084: 'eastron-sdm72d-m',
};
/** A SunSpec chain longer than this is not followed further (real devices have a handful of models). */
const MAX_SUNSPEC_MODELS = 12;

const words = (data: readonly number[], at: number, count: number): string =>
  data.slice(at, at + count).map((w) => String.fromCharCode(w >> 8, w & 0xff)).join('').replace(/\0+$/, '').trim();

export class UnitReader {
  private readonly spans = new Map<string, Promise<SpanRead>>();

  /**
   * `timeoutFor(answerBytes)`: how long to wait for an answer of that many bytes (the request is ≤ 8).
   */
  constructor(private readonly io: DoctorIo, readonly unit: number, private readonly timeoutFor: (answerBytes: number) => number) {}

  /** `count` registers (FC 3/4) or bits (FC 1/2) from `address`, read once per span. */
  read(fc: ReadFc, address: number, count: number): Promise<SpanRead> {
    const key = `${fc}:${address}:${count}`;
    let read = this.spans.get(key);
    if (!read) {
      read = this.readNow(fc, address, count);
      this.spans.set(key, read);
    }
    return read;
  }

  private async readNow(fc: ReadFc, address: number, count: number): Promise<SpanRead> {
    const req = { fc, address, count };
    const answerBytes = 5 + (fc <= 2 ? Math.ceil(count / 8) : 2 * count);
    const got = await this.io.ask(this.unit, encodeRequest(req), this.timeoutFor(answerBytes));
    if (got.kind === 'exception') return { ok: false, why: `exception ${got.code}` };
    if (got.kind !== 'answer') return { ok: false, why: got.kind === 'silence' ? 'no answer' : 'garbled answer' };
    const decoded = decodeAnswer(req, got.pdu);
    if (!decoded.ok) return { ok: false, why: 'exception' in decoded ? `exception ${decoded.exception}` : decoded.malformed };
    return { ok: true, data: (decoded.data as (number | boolean)[]).map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v)) };
  }

  /** Everything the unit says about itself, in one pass. */
  async identity(): Promise<UnitIdentity> {
    return { deviceId: await this.deviceId(), serverId: await this.serverId(), sunspec: await this.sunspec(), eastronCode: await this.eastronCode() };
  }

  private async deviceId(): Promise<Record<number, string> | null> {
    const got = await this.io.ask(this.unit, deviceIdRequest(1, 0), this.timeoutFor(256));
    if (got.kind !== 'answer') return null;
    const parsed = parseDeviceId(got.pdu);
    return typeof parsed === 'string' || Object.keys(parsed.objects).length === 0 ? null : parsed.objects;
  }

  private async serverId(): Promise<string | null> {
    const got = await this.io.ask(this.unit, serverIdRequest(), this.timeoutFor(256));
    if (got.kind !== 'answer') return null;
    const parsed = parseServerId(got.pdu);
    return typeof parsed === 'string' || parsed.text === '' ? null : parsed.text;
  }

  private async eastronCode(): Promise<number | null> {
    const got = await this.read(3, EASTRON_CODE_ADDRESS, 1);
    return got.ok ? got.data[0]! : null;
  }

  /** SunSpec's chain: the marker, then each model's ID and L (read apart, as pysunspec2 does) up to 0xFFFF. */
  private async sunspec(): Promise<UnitIdentity['sunspec']> {
    for (const base of SUNSPEC_BASES) {
      const marker = await this.read(3, base, 2);
      if (!marker.ok || marker.data[0] !== SUNSPEC_MARKER[0] || marker.data[1] !== SUNSPEC_MARKER[1]) continue;
      const models: number[] = [];
      let manufacturer = '';
      let model = '';
      let at = base + 2;
      while (models.length < MAX_SUNSPEC_MODELS && at < 0xffff) {
        const header = await this.read(3, at, 2);
        if (!header.ok || header.data[0] === 0xffff) break;
        const [id, length] = header.data as [number, number];
        models.push(id);
        if (id === 1) {
          const common = await this.read(3, at + 2, 32);
          if (common.ok) {
            manufacturer = words(common.data, 0, 16);
            model = words(common.data, 16, 16);
          }
        }
        at += 2 + length;
      }
      return { base, models, manufacturer, model };
    }
    return null;
  }
}
