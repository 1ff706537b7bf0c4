/**
 * The REST fuzzer's cases, from a seed: known-good requests for every route of docs/rest.md (and
 * docs/history.md, /metrics, the console at /) mutated 1–3 times — method, path, query, body, content type,
 * headers, a lying Content-Length, a body trickled slowly — plus raw garbage. Deterministic: the same seed
 * gives the same bytes. Routes that change the configuration get the write token only with bodies the
 * schema must refuse (a fuzzer deleting the demo's devices would test nothing but that).
 */
import type { Piece } from './raw-http.js';
import { request } from './raw-http.js';
import { rng } from '../../../test/helpers/rng.js';

export { rng };

export interface FuzzCase {
  kind: string;
  method: string;
  /** The path as sent, before `?` (to tell the documented non-envelope endpoints). */
  path: string;
  pieces: Piece[];
  halfClose: boolean;
  /** A request the server may close without answering (garbage, a body that never arrives). */
  mayNotAnswer: boolean;
  /** Local address to connect from: requests with a wrong token come from others, so the auth backoff they
   * trigger (held 401s, 429s) does not fall on the rest of the run. */
  from?: string;
}

type Token = 'write' | 'read' | 'none' | 'wrong';
/** Config-changing routes: with the write token their body must be one the schema refuses. */
type Guard = 'config' | 'device' | 'bus' | 'rollback' | 'delete' | undefined;

/** The config-changing route a (mutated) request reaches: polka matches case-insensitively, trailing slash optional. */
function guardOf(method: string, path: string): Guard {
  const p = path.toLowerCase().replace(/\/+$/, '');
  if ((method === 'PUT' || method === 'POST') && p === '/api/v1/config') return 'config';
  if (method === 'PUT' && p === '/api/v1/config/device') return 'device';
  if (method === 'PUT' && p === '/api/v1/config/bus') return 'bus';
  if (method === 'POST' && p === '/api/v1/config/rollback') return 'rollback';
  if (method === 'DELETE' && (p === '/api/v1/config/device' || p === '/api/v1/config/bus')) return 'delete';
  return undefined;
}

interface Template {
  method: string;
  path: string;
  query?: string;
  body?: string;
  type?: string;
  token: Token;
  /** A config-changing route: keeps the write token (the others switch some requests to other tokens). */
  guard?: true;
}

const J = JSON.stringify;
const TEMPLATES: Template[] = [
  { method: 'GET', path: '/api/v1/ok', token: 'none' },
  { method: 'GET', path: '/api/v1/device/readPoint', query: 'id=thermostat-1&point=temperature', token: 'none' },
  { method: 'GET', path: '/api/v1/device/writePoint', query: 'id=thermostat-1&point=setpoint&value=20.5', token: 'write' },
  { method: 'POST', path: '/api/v1/device/writePoint', body: J({ id: 'meter-1', point: 'relay', value: 1 }), type: 'application/json', token: 'write' },
  { method: 'POST', path: '/api/v1/device/writePoint', body: 'id=thermostat-2&point=setpoint&value=19', type: 'application/x-www-form-urlencoded', token: 'write' },
  { method: 'POST', path: '/api/v1/device/writePoints', body: J({ id: 'thermostat-1', values: [{ name: 'setpoint', value: 21 }] }), type: 'application/json', token: 'write' },
  { method: 'GET', path: '/api/v1/shadow/all', token: 'none' },
  { method: 'GET', path: '/api/v1/shadow/device', query: 'id=thermostat-1', token: 'read' },
  { method: 'GET', path: '/api/v1/shadow/devicePoint', query: 'id=meter-1&point=pulses', token: 'none' },
  { method: 'GET', path: '/api/v1/shadow/stats', token: 'none' },
  { method: 'GET', path: '/api/v1/health/shadow', token: 'none' },
  { method: 'GET', path: '/api/v1/config', token: 'write' },
  { method: 'POST', path: '/api/v1/config/validate', body: J({ gateway: { id: 'x' }, devices: [] }), type: 'application/json', token: 'write' },
  { method: 'PUT', path: '/api/v1/config', body: J({ devices: 5 }), type: 'application/json', token: 'write', guard: true },
  { method: 'POST', path: '/api/v1/config', body: J({ buses: 'x' }), type: 'application/json', token: 'write', guard: true },
  { method: 'GET', path: '/api/v1/config/versions', token: 'write' },
  { method: 'POST', path: '/api/v1/config/rollback', body: J({ version: -1 }), type: 'application/json', token: 'write' },
  { method: 'PUT', path: '/api/v1/config/device', query: 'id=fz-1', body: J({ model: 'demo-meter', bus: 7 }), type: 'application/json', token: 'write', guard: true },
  { method: 'DELETE', path: '/api/v1/config/device', query: 'id=fz-none', token: 'write' },
  { method: 'PUT', path: '/api/v1/config/bus', query: 'id=fz-bus', body: J({ driver: 7 }), type: 'application/json', token: 'write', guard: true },
  { method: 'DELETE', path: '/api/v1/config/bus', query: 'id=fz-none', token: 'write' },
  { method: 'GET', path: '/api/v1/models', token: 'none' },
  { method: 'GET', path: '/api/v1/devices', token: 'none' },
  { method: 'POST', path: '/api/v1/bus/scan', query: 'id=sim&from=1&to=2', token: 'write' },
  { method: 'POST', path: '/api/v1/device/testRead', body: J({ id: 'fz-t', model: 'demo-meter', bus: 'sim' }), type: 'application/json', token: 'write' },
  { method: 'GET', path: '/api/v1/buses', token: 'none' },
  { method: 'GET', path: '/api/v1/system', token: 'none' },
  { method: 'GET', path: '/api/v1/system/logs', query: 'lines=20', token: 'write' },
  { method: 'GET', path: '/api/v1/auth', token: 'read' },
  { method: 'GET', path: '/api/v1/history', query: 'device=thermostat-1&point=temperature&limit=10', token: 'none' },
  { method: 'GET', path: '/api/v1/history/aggregate', query: 'device=meter-1&point=pulses&function=avg&interval=10s', token: 'none' },
  { method: 'GET', path: '/metrics', token: 'none' },
  { method: 'GET', path: '/', token: 'none' },
  { method: 'GET', path: '/app.js', token: 'none' },
];

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'CONNECT', 'PROPFIND', 'get', 'G\u00c9T', 'FOO', ''];
const TEXT = [
  '%', '%Z', '%E0%A4%A', '%C3%28', '%FF%FE', '%00', '..%2F..%2Fetc%2Fpasswd', '__proto__', 'constructor', '+', '&&&', '=', 'a=b=c',
  '[]', "'; DROP TABLE x;--", 'thermostat-1', 'setpoint', 'relay', '1e309', '-0', 'NaN', 'Infinity', '0x10', '%F0%9F%98%80', '${x}', '<script>',
];
const TYPES = ['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'text/xml', '', 'application/json; charset=latin1',
  'multipart/form-data; boundary=x', 'application/vnd.api+json', 'application/octet-stream', '*/*', 'application/json\u00ff'];
const deep = (n: number, open: string, close: string, inner = '1'): string => open.repeat(n) + inner + close.repeat(n);

function bodies(r: () => number): string | Buffer {
  const pool: (() => string | Buffer)[] = [
    () => '{', () => '{"id":', () => '{"id":"thermostat-1",}', () => "{'id':'x'}", () => '[]', () => '[1,2,3]', () => '"str"', () => '123',
    () => 'null', () => 'true', () => '-1e999', () => J({ id: 5, point: [], value: {} }), () => J({ id: 'thermostat-1', values: null }),
    () => J({ id: 'thermostat-1', values: [null, [], { name: null }] }), () => J({ id: 'meter-1', point: 'relay', value: 1e400 }),
    () => '{"id":"meter-1","point":"relay","value":123456789012345678901234567890}', () => J({ id: 'x'.repeat(100_000) }),
    () => deep(1 + Math.floor(r() * 50_000), '[', ']'), () => deep(1 + Math.floor(r() * 20_000), '{"a":', '}'),
    () => J({ __proto__: { admin: true }, constructor: { prototype: { x: 1 } } }), () => '{"__proto__":{"polluted":1}}',
    () => Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]), () => Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
    () => 'id=meter-1&point=relay&value=1&value=2', () => 'id[]=a&id[]=b', () => '%%%%', () => '\u0000\u0001\u0002',
    () => J({ version: 'abc' }), () => J({ version: 1.5 }), () => J({ version: 99999 }), () => '', () => ' '.repeat(1000),
    () => Buffer.from(Array.from({ length: 64 + Math.floor(r() * 2048) }, () => Math.floor(r() * 256))),
  ];
  return pick(r, pool)();
}

const pick = <T>(r: () => number, list: readonly T[]): T => list[Math.floor(r() * list.length)]!;

/**
 * Makes a body for a config-changing route certainly refused: a JSON object gets one root field of the wrong
 * type; an empty body (read as `{}`, a valid empty config) becomes such an object. Anything else (not JSON,
 * not an object, a form of unknown fields) the route refuses anyway.
 */
function poison(body: string | Buffer | undefined, guard: 'config' | 'device' | 'bus'): string | Buffer {
  const field = guard === 'config' ? 'devices' : guard === 'device' ? 'bus' : 'driver';
  const text = body === undefined ? '' : body.toString().trim();
  if (text === '' || text === '{}') return J({ [field]: 17 });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return body!;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return body!;
  // Spliced in as the last key (the one JSON.parse keeps), not re-serialised: the body may be nested too
  // deep for JSON.stringify.
  return `${text.slice(0, -1)},"${field}":17}`;
}

export interface Tokens {
  write: string;
  read: string;
}

/** Case `index` of the run (each from its own seed, so any one can be replayed alone). */
export function fuzzCase(seed: number, index: number, tokens: Tokens): FuzzCase {
  const r = rng(seed ^ Math.imul(index + 1, 0x9e3779b1));
  if (r() < 0.04) {
    const bytes = Buffer.from(Array.from({ length: 1 + Math.floor(r() * 1024) }, () => Math.floor(r() * 256)));
    return { kind: 'garbage', method: '?', path: '?', pieces: [{ bytes }], halfClose: r() < 0.5, mayNotAnswer: true };
  }
  const t = pick(r, TEMPLATES);
  let method = t.method;
  let path: string | Buffer = t.path;
  let query = t.query ?? '';
  let body: string | Buffer | undefined = t.body;
  let type = t.type;
  let token: Token = t.token === 'write' && !t.guard && r() < 0.3 ? pick(r, ['none', 'read', 'wrong'] as const) : t.token;
  const headers: Record<string, string> = {};
  let length: number | null | undefined;
  let kind = 'mutated';
  let slow = false;
  let halfClose = false;
  const mutations = 1 + Math.floor(r() * 3);
  for (let m = 0; m < mutations; m++) {
    switch (Math.floor(r() * 8)) {
      case 0: method = pick(r, METHODS); break;
      case 1: {
        const p: string = String(path);
        const v = Math.floor(r() * 7);
        path = v === 0 ? `${p}/${pick(r, TEXT)}` : v === 1 ? `/${p}` : v === 2 ? `${p}/` : v === 3 ? p.toUpperCase()
          : v === 4 ? `${p}${'/x'.repeat(1 + Math.floor(r() * 9000))}` : v === 5 ? p.replace('v1', pick(r, ['v2', '%76%31', '..', 'v1/..']))
          : Buffer.concat([Buffer.from(p), Buffer.from([0x80 + Math.floor(r() * 127), 0xc3, 0x28])]);
        break;
      }
      case 2: {
        const n = r() < 0.1 ? 1 + Math.floor(r() * 3000) : 1 + Math.floor(r() * 4);
        const extra = Array.from({ length: n }, () => `${pick(r, ['id', 'point', 'value', 'lines', 'from', 'to', 'device', 'limit', 'token', pick(r, TEXT)])}=${r() < 0.05 ? 'v'.repeat(20_000) : pick(r, TEXT)}`);
        query = r() < 0.5 ? extra.join('&') : [query, ...extra].filter(Boolean).join('&');
        break;
      }
      case 3: body = bodies(r); if (method === 'GET' && r() < 0.5) method = 'POST'; break;
      case 4: type = pick(r, TYPES); break;
      case 5: {
        const v = Math.floor(r() * 8);
        if (v === 0) headers['X-Junk'] = 'j'.repeat(1 + Math.floor(r() * 20_000));
        else if (v === 1) for (let i = 0; i < 50 + Math.floor(r() * 3000); i++) headers[`X-H${i}`] = String(i);
        else if (v === 2) token = 'wrong';
        else if (v === 3) headers['Authorization'] = pick(r, ['Bearer', 'Basic dXNlcjpwdw==', `Bearer ${'t'.repeat(9000)}`, 'Bearer a b', 'bearer\u00e9\u00ff']);
        else if (v === 4) headers['Expect'] = '100-continue';
        else if (v === 5) headers['Transfer-Encoding'] = pick(r, ['chunked', 'gzip, chunked', 'identity', 'chunked, chunked']);
        else if (v === 6) headers['Content-Length'] = pick(r, ['-1', 'abc', '1, 2', '99999999999999999999', '0x10']);
        else headers['Accept-Encoding'] = 'gzip, deflate, br';
        kind = 'headers';
        break;
      }
      case 6: length = pick(r, ['more', 'less'] as const) === 'more' ? (body?.length ?? 0) + 1 + Math.floor(r() * 5000) : Math.floor((body?.length ?? 0) / 2);
        kind = 'truncated';
        halfClose = true;
        body ??= bodies(r);
        break;
      default: slow = true; kind = 'slow-body'; body ??= bodies(r);
    }
  }
  if (token !== 'none' && !headers['Authorization']) {
    headers['Authorization'] = `Bearer ${token === 'write' ? tokens.write : token === 'read' ? tokens.read : `nope-${Math.floor(r() * 1e9)}`}`;
  }
  // With the write token a config-changing route must refuse: a real change would wreck the rest of the run.
  const guard = headers['Authorization'] === `Bearer ${tokens.write}` ? guardOf(method, String(path)) : undefined;
  if (guard === 'config' || guard === 'device' || guard === 'bus') {
    body = poison(body, guard);
    length = undefined;
  } else if (guard === 'rollback') {
    body = J({ version: 'fz' });
    query = query.replace(/\bversion=[^&]*/g, 'version=fz');
  } else if (guard === 'delete') {
    query = query.replace(/\bid=[^&]*/g, 'id=fz-none');
  }
  if (type) headers['Content-Type'] = type;
  const wrongAuth = headers['Authorization'] !== undefined && ![`Bearer ${tokens.write}`, `Bearer ${tokens.read}`].includes(headers['Authorization']);
  const target = Buffer.concat([Buffer.isBuffer(path) ? path : Buffer.from(path, 'latin1'), Buffer.from(query ? `?${query}` : '', 'latin1')]);
  const bodyBuf = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const bytes = request(method, target, { headers, ...(bodyBuf ? { body: bodyBuf } : {}), ...(length === undefined ? {} : { length }) });
  const pieces: Piece[] = slow ? split(r, bytes) : [{ bytes }];
  return {
    kind, method, path: String(path), pieces, halfClose,
    // A lying length, chunked framing of a plain body or an unparsable request line may end without an answer.
    mayNotAnswer: kind !== 'mutated' || /[^\x21-\x7e]/.test(String(path)) || !/^[A-Z]+$/.test(method),
    // Spread over 250 addresses: from one, 10,000 cases would run into the 30 s cap of every hold.
    ...(wrongAuth ? { from: `127.0.2.${1 + (index % 250)}` } : {}),
  };
}

/** A body trickled: 3–15 pieces 10–150 ms apart (slow, but inside the server's request timeout). */
function split(r: () => number, bytes: Buffer): Piece[] {
  const n = 3 + Math.floor(r() * 13);
  const size = Math.ceil(bytes.length / n);
  return Array.from({ length: n }, (_, i) => ({ bytes: bytes.subarray(i * size, (i + 1) * size), delayMs: i === 0 ? 0 : 10 + Math.floor(r() * 140) }))
    .filter((p) => p.bytes.length > 0);
}

/** Paths answered outside the envelope by design (docs/rest.md): Prometheus text and the console's files. */
export function exemptPath(path: string): boolean {
  // As polka matches them: any case, an optional trailing slash.
  const p = path.toLowerCase().replace(/(.)\/+$/, '$1');
  return ['/metrics', '/', '/index.html', '/app.js', '/app.css'].includes(p);
}
