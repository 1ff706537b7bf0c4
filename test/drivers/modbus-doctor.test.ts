/** The doctor's pure parts on bytes and a register image: setting order, answer judging (echo, late frames), model scoring. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { libraryModels } from '../../src/cli/doctor.js';
import { judgeAnswer } from '../../src/drivers/modbus/doctor/collect.js';
import { runDoctor } from '../../src/drivers/modbus/doctor/doctor.js';
import { rtuFrame } from '../../src/protocol/modbus/frame.js';
import { answerTimeoutMs, candidateSettings, describeSetting } from '../../src/drivers/modbus/doctor/settings.js';
import type { DoctorIo, DoctorOptions, Exchange } from '../../src/protocol/modbus/doctor-types.js';
import { decodeRequest } from '../../src/protocol/modbus/pdu.js';

const AUTO: DoctorOptions = { baud: 'auto', parity: 'auto', stopBits: 'auto', from: 1, to: 247, listenS: 0 };

test('candidate settings: the likely four first, every common rate and frame once, given values alone', () => {
  const all = candidateSettings(AUTO).map(describeSetting);
  assert.equal(all.slice(0, 4), ['9600 8N1', '9600 8E1', '19200 8N1', '19200 8E1']);
  assert.is(all.length, 24);
  assert.is(new Set(all).size, 24);
  assert.ok(all.indexOf('19200 8O1') > all.indexOf('115200 8E1'), 'odd parity after every rate with N and E');
  assert.equal(candidateSettings({ ...AUTO, baud: 19200, parity: 'odd' }).map(describeSetting), ['19200 8O1']);
  assert.equal(candidateSettings({ ...AUTO, baud: 57600 }).map(describeSetting), ['57600 8N1', '57600 8E1', '57600 8O1', '57600 8N2']);
  const first = { baud_rate: 4800, parity: 'even', data_bits: 8, stop_bits: 1 } as const;
  assert.is(describeSetting(candidateSettings(AUTO, first)[0]!), '4800 8E1');
  assert.is(candidateSettings(AUTO, first).length, 24);
});

test('answer timeout: wire time of request and answer plus the margin', () => {
  // 15 characters of 11 bits at 19200: 8.6 ms
  assert.is(answerTimeoutMs({ baud_rate: 19200, parity: 'odd', data_bits: 8, stop_bits: 1 }, 8, 7), 59);
  assert.is(answerTimeoutMs({ baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1 }, 8, 7, 0), 16);
});

const req = rtuFrame(7, Uint8Array.of(3, 0, 0, 0, 1));
const exception = rtuFrame(7, Uint8Array.of(0x83, 2));
const bytes = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(parts.flatMap((p) => [...p]));

test('judging: an answer, an echo stripped, a late frame of another unit skipped, garbage, silence', () => {
  const data = rtuFrame(7, Uint8Array.of(3, 2, 0x12, 0x34));
  assert.equal(judgeAnswer(req, data, data.length, false), { exchange: { kind: 'answer', pdu: Uint8Array.of(3, 2, 0x12, 0x34) }, echo: false, late: [] });
  const echoed = bytes(req, exception);
  assert.equal(judgeAnswer(req, echoed, echoed.length, false), { exchange: { kind: 'exception', code: 2 }, echo: true, late: [] });
  assert.equal(judgeAnswer(req, echoed, req.length, false).exchange, null, 'the echo alone: wait for the answer');
  assert.equal(judgeAnswer(req, echoed, req.length, true), { exchange: { kind: 'silence' }, echo: true, late: [] });
  const late = bytes(rtuFrame(6, Uint8Array.of(0x83, 2)), exception);
  assert.equal(judgeAnswer(req, late, late.length, false), { exchange: { kind: 'exception', code: 2 }, echo: false, late: [6] });
  const noise = Uint8Array.of(0x55, 0xa1, 0x07, 0xff, 0x00, 0x13);
  assert.equal(judgeAnswer(req, noise, noise.length, false).exchange, null);
  assert.equal(judgeAnswer(req, noise, noise.length, true).exchange, { kind: 'garbage', bytes: 6 });
  assert.equal(judgeAnswer(req, noise, 0, true).exchange, { kind: 'silence' });
});

test('judging at the deadline: a frame still coming is told from garbage, so the ask waits for its end', () => {
  const cut = bytes(req, exception);
  assert.ok(judgeAnswer(req, cut, req.length + 3, true).incomplete, 'the answer\'s first 3 bytes after the echo');
  assert.ok(judgeAnswer(req, cut, 4, true).incomplete, 'half the echo');
  const lateCut = bytes(req, rtuFrame(6, Uint8Array.of(3, 2, 0, 9)));
  const j = judgeAnswer(req, lateCut, lateCut.length - 2, true);
  assert.ok(j.incomplete, 'another unit\'s late answer, its CRC not in yet');
  assert.is(judgeAnswer(req, lateCut, lateCut.length, true).late[0], 6, 'whole, it names its unit');
  assert.not.ok(judgeAnswer(req, Uint8Array.of(0x55, 0xa1, 0x07, 0xff, 0x00, 0x13), 6, true).incomplete, 'garbage is final');
  assert.not.ok(judgeAnswer(req, cut, cut.length, true).incomplete, 'a whole answer');
  assert.not.ok(judgeAnswer(req, cut, 0, true).incomplete, 'silence');
});

/** A unit's registers as a fake line answers them: data where every register exists, exception 2 elsewhere. */
class ImageIo implements DoctorIo {
  sent = 0;
  constructor(private readonly units: Map<number, { input: Map<number, number>; holding: Map<number, number> }>) {}
  async ask(unit: number, pdu: Uint8Array, _timeoutMs?: number): Promise<Exchange> {
    this.sent += pdu.length + 3;
    const image = this.units.get(unit);
    if (!image) return { kind: 'silence' };
    const decoded = decodeRequest(pdu);
    if (!decoded.ok || (decoded.req.fc !== 3 && decoded.req.fc !== 4)) return { kind: 'exception', code: 1 };
    const { fc, address, count } = decoded.req as { fc: 3 | 4; address: number; count: number };
    const table = fc === 3 ? image.holding : image.input;
    const words: number[] = [];
    for (let a = address; a < address + count; a++) {
      const w = table.get(a);
      if (w === undefined) return { kind: 'exception', code: 2 };
      words.push(w);
    }
    return { kind: 'answer', pdu: Uint8Array.from([fc, count * 2, ...words.flatMap((w) => [w >> 8, w & 0xff])]) };
  }
  sentBytes(): number { return this.sent; }
  async close(): Promise<void> {}
}

const floatWords = (v: number): [number, number] => {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, v);
  return [view.getUint16(0), view.getUint16(2)];
};

/** An SDM630 as its protocol document lays it out: float32 input registers 30001-30384, meter code 0070h at holding FC02h. */
function sdm630Image(): { input: Map<number, number>; holding: Map<number, number> } {
  const input = new Map<number, number>();
  for (let a = 0; a < 0x180; a += 2) floatWords(50).forEach((w, i) => input.set(a + i, w));
  for (const [a, v] of [[0, 230.1], [2, 231.4], [4, 229.7], [6, 12.3], [70, 49.98], [72, 23456.7]] as const) floatWords(v).forEach((w, i) => input.set(a + i, w));
  const holding = new Map<number, number>([[0xfc00, 0x0136], [0xfc01, 0x5e35], [0xfc02, 0x0070]]);
  floatWords(3).forEach((w, i) => holding.set(10 + i, w));
  return { input, holding };
}

const { models } = libraryModels();

test('scoring: an SDM630 register image names eastron-sdm630 first, by its meter code, with the reason', async () => {
  const io = new ImageIo(new Map([[4, sdm630Image()]]));
  const report = await runDoctor({ io, settings: { baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1 } }, { ...AUTO, from: 1, to: 8 }, models);
  assert.is(report.units.length, 1);
  const unit = report.units[0]!;
  assert.is(unit.unit, 4);
  assert.is(unit.answers, 'exception');
  assert.is(unit.candidates[0]?.model, 'eastron-sdm630', JSON.stringify(unit.candidates, null, 1));
  assert.is(unit.candidates[0]!.score, 1);
  assert.match(unit.candidates[0]!.why, /meter_code is 112/);
  // The other Eastron models read the same plausible voltages, but their meter code says they are not there.
  const others = unit.candidates.filter((c) => /^eastron-/.test(c.model) && c.model !== 'eastron-sdm630');
  assert.equal(others, [], `models whose meter code the unit contradicts are no candidates: ${JSON.stringify(others)}`);
  assert.is(report.line?.echo, false);
  assert.ok(report.sent_bytes > 0);
});

test('scoring: the same image without a meter code gives no model a whole score on identity it does not have', async () => {
  const image = sdm630Image();
  image.holding.delete(0xfc02);
  const io = new ImageIo(new Map([[4, image]]));
  const report = await runDoctor({ io, settings: { baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1 } }, { ...AUTO, from: 4, to: 4 }, models);
  const top = report.units[0]!.candidates[0]!;
  assert.match(top.model, /^eastron-/);
  assert.not.match(report.units[0]!.candidates.find((c) => c.model === 'eastron-sdm630')!.why, /meter_code is 112/);
});

/** ImageIo on a slow line: every answer comes after a short wait is over (seen in the next ask), in time for a long one. */
class SlowIo extends ImageIo {
  private readonly late = new Set<number>();
  override async ask(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<Exchange> {
    const got = await super.ask(unit, pdu);
    if (got.kind === 'silence' || timeoutMs >= 300) return got;
    this.late.add(unit);
    return { kind: 'silence' };
  }
  lateUnits(): number[] { return [...this.late]; }
}

test('searching: a setting is proven by a unit that answers after its short wait; it is asked again slowly and identified', async () => {
  const tried: number[] = [];
  const report = await runDoctor({
    open: async (settings) => {
      tried.push(settings.baud_rate);
      return settings.baud_rate === 19200 && settings.parity === 'none' && settings.stop_bits === 1 ? new SlowIo(new Map([[1, sdm630Image()]])) : new ImageIo(new Map());
    },
  }, { ...AUTO, from: 1, to: 3 }, models, () => {}, { marginMs: 50 });
  assert.equal(report.line && [report.line.baud_rate, report.line.parity], [19200, 'none'], `tried ${tried.join(', ')}`);
  assert.equal(report.units.map((u) => [u.unit, u.answers]), [[1, 'exception']]);
  assert.is(report.units[0]!.candidates[0]?.model, 'eastron-sdm630');
});

test.run();
