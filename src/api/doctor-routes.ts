/**
 * The bus doctor on a running bus (docs/rest.md "Bus doctor"): `POST /buses/<id>/doctor` starts a run and answers
 * 202 with the run at once; `GET /buses/<id>/doctor` follows its progress and, when it is over, holds the report.
 * A serial setting left out is the bus's own; `auto` or another value searches the line's settings, which takes
 * the line from the bus for the run (its polls pause). A refusal carries its own HTTP status, as an update's
 * does: 400 naming the field, 404 for an unknown bus, 409 while a run is under way on that bus or the bus is
 * not running.
 */
import { isGatewayError } from '../core/errors.js';
import { readFields, type Fields } from './body.js';
import type { ApiRequest, BusDoctor, BusDoctorOptions, RouteKit } from './context.js';
import { HttpError, okEnvelope, sendEnvelope } from './envelope.js';

/** A doctor's options are a few fields: a larger body is not one. */
const MAX_BODY = 4096;
const FIELDS = new Set(['baud', 'parity', 'stop_bits', 'from', 'to', 'listen']);
const BAUDS = [1200, 2400, 4800, 9600, 14_400, 19_200, 38_400, 57_600, 115_200];

const bad = (message: string): HttpError => new HttpError(400, message);

/** A number from JSON, or from a form's text. */
function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
}

function integer(body: Fields, field: string, min: number, max: number, fallback: number): number {
  const value = body[field];
  if (value === undefined || value === null || value === '') return fallback;
  const n = numberOf(value);
  if (n === undefined || !Number.isInteger(n) || n < min || n > max) throw bad(`${field} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  return n;
}

/** Left out (or empty in a form): the bus's own setting. */
const isOwn = (value: unknown): boolean => value === undefined || value === null || value === '';

/** The body's options, each checked; a bad one is refused naming the field. */
export function doctorOptions(body: Fields | undefined): BusDoctorOptions {
  const b = body ?? {};
  for (const key of Object.keys(b)) if (!FIELDS.has(key)) throw bad(`unknown field: ${key} (the doctor takes ${[...FIELDS].join(', ')})`);
  let baud: BusDoctorOptions['baud'] = 'own';
  if (b['baud'] === 'auto') baud = 'auto';
  else if (!isOwn(b['baud'])) {
    const n = numberOf(b['baud']);
    if (n === undefined || !BAUDS.includes(n)) throw bad(`baud must be "auto" or one of ${BAUDS.join(', ')}, not ${JSON.stringify(b['baud'])}`);
    baud = n;
  }
  let parity: BusDoctorOptions['parity'] = 'own';
  if (!isOwn(b['parity'])) {
    const p = b['parity'];
    if (p !== 'auto' && p !== 'none' && p !== 'even' && p !== 'odd') throw bad(`parity must be "auto", "none", "even" or "odd", not ${JSON.stringify(p)}`);
    parity = p;
  }
  let stopBits: BusDoctorOptions['stopBits'] = 'own';
  if (b['stop_bits'] === 'auto') stopBits = 'auto';
  else if (!isOwn(b['stop_bits'])) {
    const n = numberOf(b['stop_bits']);
    if (n !== 1 && n !== 2) throw bad(`stop_bits must be "auto", 1 or 2, not ${JSON.stringify(b['stop_bits'])}`);
    stopBits = n;
  }
  const from = integer(b, 'from', 1, 247, 1);
  const to = integer(b, 'to', 1, 247, 247);
  if (from > to) throw bad(`from (${from}) must not be above to (${to})`);
  const listenS = integer(b, 'listen', 0, 600, 0);
  return { baud, parity, stopBits, from, to, listenS };
}

/** A refusal of the doctor service (`status` 400/404/409) as its HTTP answer; anything else as it is. */
function refusal(err: unknown): unknown {
  const status = (err as { status?: unknown }).status;
  return isGatewayError(err) && (status === 400 || status === 404 || status === 409) ? new HttpError(status, err.message) : err;
}

export function mountDoctorRoutes(doctor: BusDoctor, kit: RouteKit): void {
  const busId = (req: ApiRequest): string => req.params['id'] ?? '';
  kit.route('GET', '/buses/:id/doctor', 'read', (req) => {
    try {
      return doctor.status(busId(req));
    } catch (err) {
      throw refusal(err);
    }
  });
  // It sends requests to every unit id for tens of seconds: a change, not a read (as a scan).
  kit.stream('POST', '/buses/:id/doctor', 'write', 0, async (req, res) => {
    // Bad JSON is a 400 here, as every other refusal of this route (elsewhere a handler's failure is HTTP 200).
    const body = await readFields(req, MAX_BODY).catch((err: unknown) => {
      throw isGatewayError(err) && err.code === 'BAD_REQUEST' ? bad(err.message) : err;
    });
    const options = doctorOptions(body);
    let job: unknown;
    try {
      job = doctor.begin(busId(req), options);
    } catch (err) {
      throw refusal(err);
    }
    // Accepted: the run goes on; GET follows it.
    sendEnvelope(req, res, 202, okEnvelope(job));
  });
}
