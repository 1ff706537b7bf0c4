/**
 * `POST|GET /api/v1/buses/<id>/doctor` over real HTTP on port 0, with the real doctor service and a doctor run
 * held by the test: 202 with the run at once, progress then the report by GET, 409 for a second run while one
 * is under way, 400 naming the field for a bad body or serial settings on a TCP bus, 404 for an unknown bus, the
 * write scope for POST; other settings than the bus's search with the line taken from the bus, given back however
 * the run ends. The run on a real line is test/integration/doctor-rest.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startHttp, type HttpHandle } from '../../src/api/index.js';
import type { BusConfig } from '../../src/config/types.js';
import { systemClock } from '../../src/core/clock.js';
import type { BusDoctorIo } from '../../src/protocol/modbus/doctor-types.js';
import type { OwnedIo } from '../../src/drivers/modbus/doctor/doctor.js';
import type { DoctorOptions, DoctorProgress, DoctorReport, LineSettings } from '../../src/protocol/modbus/doctor-types.js';
import type { Driver } from '../../src/drivers/types.js';
import { DoctorService } from '../../src/runtime/doctor-service.js';
import { silentLogger } from '../../src/util/logger.js';
import { assertEnvelope, withTimeout } from './helpers.js';

const BUSES: BusConfig[] = [
  { id: 'rs485', driver: 'modbus-rtu', port: '/dev/null', baud_rate: 19200, parity: 'even', data_bits: 8, stop_bits: 1, echo: false } as BusConfig,
  { id: 'sim', driver: 'simulator' } as BusConfig,
  { id: 'plc', driver: 'modbus-tcp', host: '127.0.0.1', port: 502 } as BusConfig,
];

const REPORT: DoctorReport = {
  line: { baud_rate: 19200, parity: 'even', data_bits: 8, stop_bits: 1, echo: false },
  units: [{ unit: 3, answers: 'data', candidates: [{ model: 'eastron-sdm630', score: 0.9, why: 'meter code 0x0070' }] }],
  traffic: [], hints: [], sent_bytes: 120, elapsed_ms: 1500,
};

interface Held {
  calls: { options: DoctorOptions; closed: () => boolean; open?: (s: LineSettings) => Promise<OwnedIo>; first?: LineSettings }[];
  /** The line taken from a bus / given back, in order: `take rs485`, `back rs485`. */
  line: string[];
  /** Ports the doctor opened, with the setting. */
  opened: string[];
  /** Listening runs: the port, the settings tried, the seconds, and whether the run was told to stop. */
  listens: { path: string; candidates: LineSettings[]; seconds: number; signal: AbortSignal }[];
  /** The run's end with an error. */
  fail: (err: Error) => void;
  /** Called when a port the doctor opened is closed. */
  closeOpened: () => void;
  doctor?: DoctorService;
  progress: (p: DoctorProgress) => void;
  finish: (r: DoctorReport) => void;
  /** Every run's end, so none outlives its test. */
  ends: ((r: DoctorReport) => void)[];
}

async function withDoctor(fn: (port: number, held: Held) => Promise<void>, tokens: string[] = []): Promise<void> {
  const held: Held = { calls: [], line: [], opened: [], listens: [], progress: () => {}, finish: () => {}, fail: () => {}, closeOpened: () => {}, ends: [] };
  const io = (): BusDoctorIo => {
    let closed = false;
    return { ask: async () => ({ kind: 'silence' }), sentBytes: () => 0, close: () => void (closed = true), get closed() { return closed; } } as BusDoctorIo;
  };
  const drivers = new Map<string, Driver>([
    ['rs485', { busId: 'rs485', doctorIo: io } as unknown as Driver],
    ['plc', { busId: 'plc', doctorIo: io } as unknown as Driver],
  ]);
  const doctor = new DoctorService({
    drivers, buses: () => BUSES, clock: systemClock, log: silentLogger,
    takeLine: async (id) => {
      held.line.push(`take ${id}`);
      return async () => void held.line.push(`back ${id}`);
    },
    openSerial: async (path, s) => {
      held.opened.push(`${path} ${s.baud_rate} ${s.parity} ${s.stop_bits}`);
      return { ask: async () => ({ kind: 'silence' }), sentBytes: () => 0, close: async () => held.closeOpened() };
    },
    listen: (path, candidates, seconds, onProgress, signal) => new Promise<DoctorReport>((resolve, reject) => {
      held.listens.push({ path, candidates, seconds, signal });
      held.progress = onProgress;
      held.finish = resolve;
      held.fail = reject;
      held.ends.push(resolve);
      signal.addEventListener('abort', () => resolve(REPORT));
    }),
    run: (link, options, onProgress) => new Promise<DoctorReport>((resolve, reject) => {
      if ('open' in link) held.calls.push({ options, closed: () => false, open: link.open, first: link.first });
      else held.calls.push({ options, closed: () => (link.io as unknown as { closed: boolean }).closed });
      held.progress = onProgress;
      held.finish = resolve;
      held.fail = reject;
      held.ends.push(resolve);
    }),
  });
  held.doctor = doctor;
  const handle: HttpHandle = await withTimeout(startHttp({
    shadow: {} as never, io: {} as never, log: silentLogger, health: () => ({ status: 'healthy', checks: {} }), doctor,
    http: { host: '127.0.0.1', port: 0, body_limit: 1 << 20, allowed_hosts: [], auth: { tokens, read_tokens: [], protect_reads: false } },
  }, { host: '127.0.0.1', port: 0 }), 5000, 'startHttp');
  try {
    await fn(handle.port, held);
  } finally {
    for (const end of held.ends) end(REPORT);
    await withTimeout(doctor.stop(), 6000, 'doctor.stop');
    await withTimeout(handle.close(), 5000, 'close');
  }
}

async function req(port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: { success: boolean; errorCode: number; errorMsg: string; data: any } }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
    method, signal: AbortSignal.timeout(5000),
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }),
    ...(body === undefined ? { headers } : {}),
  });
  const text = await res.text();
  const parsed = JSON.parse(text);
  // The envelope check of the other REST tests; an accepted run is 202 with the envelope of a success.
  if (res.status !== 202) assertEnvelope(text, res.status, `${method} ${path}`);
  return { status: res.status, body: parsed };
}

test('POST starts a run (202, the run at once); GET shows its progress, then its report', async () => {
  await withDoctor(async (port, held) => {
    assert.equal((await req(port, 'GET', '/buses/rs485/doctor')).body.data, null, 'no run yet');
    const started = await req(port, 'POST', '/buses/rs485/doctor', { from: 1, to: 10 });
    assert.is(started.status, 202, JSON.stringify(started.body));
    assert.equal([started.body.success, started.body.errorCode], [true, 200]);
    const job = started.body.data;
    assert.is(job.state, 'running');
    assert.type(job.id, 'string');
    // The bus's own settings in place of those left out, through the bus's queue: the line stays the bus's.
    assert.equal(job.options, { baud: 19200, parity: 'even', stop_bits: 1, from: 1, to: 10, listen: 0 });
    assert.is(job.takes_line, false);
    assert.equal(job.bus_line, { baud_rate: 19200, parity: 'even', stop_bits: 1, echo: false });
    assert.equal(held.line, []);
    assert.equal(held.calls[0]!.options, { baud: 19200, parity: 'even', stopBits: 1, from: 1, to: 10, listenS: 0 });
    held.progress({ phase: 'units', done: 0.5, note: 'unit 5 of 10' });
    const during = (await req(port, 'GET', '/buses/rs485/doctor')).body.data;
    assert.equal([during.state, during.progress], ['running', { phase: 'units', done: 0.5, note: 'unit 5 of 10' }]);
    held.finish(REPORT);
    await new Promise((r) => setTimeout(r, 20));
    const after = (await req(port, 'GET', '/buses/rs485/doctor')).body.data;
    assert.equal([after.id, after.state, after.report], [job.id, 'done', REPORT]);
    assert.type(after.finished_at, 'string');
    // Done: the next run may start.
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', {})).status, 202);
  });
});

test('a second POST while a run is under way: 409 naming the run; another bus is not held up', async () => {
  await withDoctor(async (port, held) => {
    const first = await req(port, 'POST', '/buses/rs485/doctor', {});
    assert.is(first.status, 202);
    const second = await req(port, 'POST', '/buses/rs485/doctor', {});
    assert.is(second.status, 409);
    assert.equal([second.body.success, second.body.errorCode, second.body.data], [false, 409, null]);
    assert.match(second.body.errorMsg, /already running on bus rs485/);
    assert.ok(second.body.errorMsg.includes(first.body.data.id), second.body.errorMsg);
    assert.is(held.calls.length, 1, 'no second run started');
    assert.is((await req(port, 'POST', '/buses/plc/doctor', {})).status, 202, 'the TCP bus runs beside it');
  });
});

test('bad bodies: 400 naming the field; nothing starts', async () => {
  await withDoctor(async (port, held) => {
    const cases: [unknown, RegExp][] = [
      [{ baud: 9601 }, /^baud must be "auto" or one of/],
      [{ baud: 'fast' }, /^baud must be/],
      [{ parity: 'mark' }, /^parity must be/],
      [{ stop_bits: 3 }, /^stop_bits must be/],
      [{ from: 0 }, /^from must be an integer from 1 to 247, not 0/],
      [{ to: 248 }, /^to must be an integer from 1 to 247/],
      [{ from: 1.5 }, /^from must be an integer/],
      [{ from: 20, to: 10 }, /^from \(20\) must not be above to \(10\)/],
      [{ listen: -1 }, /^listen must be an integer from 0 to 600/],
      [{ units: 5 }, /^unknown field: units/],
      ['[1,2]', /request body must be a JSON object/],
      ['{"from":', /invalid JSON body/],
    ];
    for (const [body, why] of cases) {
      const r = await req(port, 'POST', '/buses/rs485/doctor', body);
      assert.is(r.status, 400, `${JSON.stringify(body)}: ${r.status} ${r.body.errorMsg}`);
      assert.match(r.body.errorMsg, why, JSON.stringify(body));
    }
    assert.is(held.calls.length, 0);
    // The bus's own settings, named, are taken.
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', { baud: 19200, parity: 'even', stop_bits: 1 })).status, 202);
  });
});

test('unknown bus 404, a simulator bus 400, a TCP bus with serial settings 400, a stopped run ends failed', async () => {
  await withDoctor(async (port, held) => {
    const unknown = await req(port, 'POST', '/buses/nope/doctor', {});
    assert.equal([unknown.status, unknown.body.errorMsg], [404, 'unknown bus: nope']);
    assert.is((await req(port, 'GET', '/buses/nope/doctor')).status, 404);
    const sim = await req(port, 'POST', '/buses/sim/doctor', {});
    assert.is(sim.status, 400);
    assert.match(sim.body.errorMsg, /simulator bus: the doctor speaks Modbus/);
    const tcp = await req(port, 'POST', '/buses/plc/doctor', { baud: 9600 });
    assert.equal([tcp.status, tcp.body.errorMsg.startsWith('baud: bus plc is Modbus TCP')], [400, true], tcp.body.errorMsg);
    for (const field of ['baud', 'parity', 'stop_bits']) {
      const auto = await req(port, 'POST', '/buses/plc/doctor', { [field]: 'auto' });
      assert.equal([auto.status, auto.body.errorMsg], [400, `${field}: bus plc is Modbus TCP, which has no serial settings`]);
    }
    const listen = await req(port, 'POST', '/buses/plc/doctor', { listen: 5 });
    assert.equal([listen.status, listen.body.errorMsg], [400, 'listen: bus plc is Modbus TCP, which has no line to listen to']);
    assert.is(held.calls.length, 0);
  });
});

test('baud "auto": the line is taken from the bus, searched from the bus\'s own settings on, and given back when the run ends', async () => {
  await withDoctor(async (port, held) => {
    const started = await req(port, 'POST', '/buses/rs485/doctor', { baud: 'auto', to: 5 });
    assert.is(started.status, 202, JSON.stringify(started.body));
    const job = started.body.data;
    assert.is(job.takes_line, true);
    // The fields left out are searched too: whoever asks for a search does not know them either.
    assert.equal(job.options, { baud: 'auto', parity: 'auto', stop_bits: 'auto', from: 1, to: 5, listen: 0 });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(held.line, ['take rs485'], 'the bus is stopped for the run');
    const call = held.calls[0]!;
    assert.equal(call.options, { baud: 'auto', parity: 'auto', stopBits: 'auto', from: 1, to: 5, listenS: 0 });
    assert.equal(call.first, { baud_rate: 19200, parity: 'even', data_bits: 8, stop_bits: 1 });
    await call.open!({ baud_rate: 9600, parity: 'odd', data_bits: 8, stop_bits: 1 });
    assert.equal(held.opened, ['/dev/null 9600 odd 1'], 'the bus\'s own port');
    held.finish(REPORT);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(held.line, ['take rs485', 'back rs485']);
    assert.is((await req(port, 'GET', '/buses/rs485/doctor')).body.data.state, 'done');
  });
});

test('listen: the line is taken from the bus (its polls would be all it hears), listened to at its own settings, and given back', async () => {
  await withDoctor(async (port, held) => {
    const started = await req(port, 'POST', '/buses/rs485/doctor', { listen: 5 });
    assert.is(started.status, 202, JSON.stringify(started.body));
    assert.equal([started.body.data.takes_line, started.body.data.options.listen], [true, 5]);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(held.line, ['take rs485'], 'the bus is stopped while listening');
    assert.equal(held.listens.map((l) => [l.path, l.candidates, l.seconds]), [['/dev/null', [{ baud_rate: 19200, parity: 'even', data_bits: 8, stop_bits: 1 }], 5]]);
    assert.is(held.calls.length, 0, 'nothing asked: listening sends nothing');
    held.finish({ ...REPORT, units: [], sent_bytes: 0 });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(held.line, ['take rs485', 'back rs485']);
    // Stopped while listening: told to stop, and the line is given back.
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', { listen: 60, baud: 'auto' })).status, 202);
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(held.listens[1]!.candidates.length > 1, 'baud "auto": every common setting in turn');
    await held.doctor!.stop();
    assert.is(held.listens[1]!.signal.aborted, true);
    assert.equal(held.line, ['take rs485', 'back rs485', 'take rs485', 'back rs485']);
  });
});

test('another setting than the bus\'s searches it; a failed run gives the line back; the bus\'s own named is no search', async () => {
  await withDoctor(async (port, held) => {
    const started = await req(port, 'POST', '/buses/rs485/doctor', { baud: 9600 });
    assert.is(started.status, 202, JSON.stringify(started.body));
    assert.equal([started.body.data.takes_line, started.body.data.options.baud, started.body.data.options.parity], [true, 9600, 'auto']);
    await new Promise((r) => setTimeout(r, 20));
    held.fail(new Error('the port went away'));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(held.line, ['take rs485', 'back rs485'], 'given back after a failure');
    const failed = (await req(port, 'GET', '/buses/rs485/doctor')).body.data;
    assert.equal([failed.state, failed.error], ['failed', 'internal error']);
    const own = await req(port, 'POST', '/buses/rs485/doctor', { baud: 19200, parity: 'even' });
    assert.equal([own.status, own.body.data.takes_line], [202, false]);
    assert.equal(held.line, ['take rs485', 'back rs485'], 'not taken at its own settings');
  });
});

test('stopping the service during a search closes the port open, fails the run\'s next request and gives the line back', async () => {
  await withDoctor(async (port, held) => {
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', { parity: 'auto' })).status, 202);
    await new Promise((r) => setTimeout(r, 20));
    let closed = 0;
    held.closeOpened = () => closed++;
    const io = await held.calls[0]!.open!({ baud_rate: 19200, parity: 'odd', data_bits: 8, stop_bits: 1 });
    const stopping = held.doctor!.stop();
    await new Promise((r) => setTimeout(r, 20));
    assert.is(closed, 1, 'the port open was closed');
    const asked = await io.ask(1, new Uint8Array([3, 0, 0, 0, 1]), 100).then(() => 'answered', (e: Error) => e.message);
    assert.is(asked, 'the bus doctor was stopped');
    held.fail(new Error(asked));
    await withTimeout(stopping, 2000, 'doctor.stop');
    assert.equal(held.line, ['take rs485', 'back rs485']);
  });
});

test('POST needs the write token; GET is a read', async () => {
  await withDoctor(async (port) => {
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', {})).status, 401);
    assert.is((await req(port, 'GET', '/buses/rs485/doctor')).status, 200);
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', {}, { authorization: 'Bearer w' })).status, 202);
  }, ['w']);
});

test('stopping the service closes a running run\'s line: its next request fails', async () => {
  await withDoctor(async (port, held) => {
    assert.is((await req(port, 'POST', '/buses/rs485/doctor', {})).status, 202);
    assert.is(held.calls[0]!.closed(), false);
  });
  // withDoctor stopped the service: the run's line was closed (the fake run ended with it).
});

test.run();
