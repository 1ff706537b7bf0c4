/**
 * The precompiled validator plus the unit walk against the way the config was validated before: ajv compiling
 * schema.json at run time with a converting `x-unit` keyword (kept here as the reference). Same verdict, same
 * errors, same data (defaults filled, durations and sizes converted) on every config below.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseDuration, parseSize } from '../../src/core/duration.js';
import { readModelLibrary } from '../../src/config/models.js';
import { formatAjvErrors, SCHEMA_URL, validateConfigShape, validateModelShape } from '../../src/config/validator.js';

type AjvClass = typeof AjvModule.default;
const Ajv: AjvClass = (AjvModule as unknown as { default?: AjvClass }).default ?? (AjvModule as unknown as AjvClass);
type Shape = (data: unknown) => { ok: boolean; errors: ErrorObject[] };

/** The validator as it was: compiled at start, `x-unit` recording the texts it saw, converted after validation. */
function referenceValidators(): { config: Shape; model: Shape } {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, verbose: true, allowUnionTypes: true, strict: true });
  let pending: Array<{ parent: Record<string | number, unknown>; key: string | number; unit: string }> = [];
  ajv.addKeyword({
    keyword: 'x-unit',
    schemaType: 'string',
    errors: false,
    validate(unit: string, data: unknown, _schema: unknown, cxt?: { parentData: unknown; parentDataProperty: string | number }) {
      if (typeof data === 'string' && cxt && typeof cxt.parentData === 'object' && cxt.parentData !== null) {
        pending.push({ parent: cxt.parentData as Record<string | number, unknown>, key: cxt.parentDataProperty, unit });
      }
      return true;
    },
  });
  ajv.addSchema(JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as object, 'config');
  const wrap = (fn: ValidateFunction): Shape => (data) => {
    pending = [];
    const ok = fn(data) as boolean;
    const errors = [...(fn.errors ?? [])];
    for (const { parent, key, unit } of pending) {
      const text = parent[key];
      if (typeof text !== 'string') continue;
      try {
        parent[key] = unit === 'size' ? parseSize(text) : parseDuration(text);
      } catch {
        // the pattern error reports it
      }
    }
    return { ok, errors };
  };
  return { config: wrap(ajv.getSchema('config')!), model: wrap(ajv.getSchema('config#/definitions/model')!) };
}

const reference = referenceValidators();

/** Runs both on copies of `raw`; they must agree on everything. Returns the converted data. */
function agree(kind: 'config' | 'model', raw: unknown, label: string): unknown {
  const [before, after] = [structuredClone(raw), structuredClone(raw)];
  const old = reference[kind](before);
  const now = (kind === 'config' ? validateConfigShape : validateModelShape)(after);
  assert.is(now.ok, old.ok, `${label}: verdict`);
  assert.equal(formatAjvErrors(now.errors), formatAjvErrors(old.errors), `${label}: problems`);
  assert.equal(now.errors, old.errors, `${label}: ajv errors`);
  assert.equal(after, before, `${label}: data`);
  return after;
}

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const readJson = (rel: string): unknown => JSON.parse(readFileSync(`${REPO}${rel}`, 'utf8'));

const point = (extra: Record<string, unknown>): Record<string, unknown> => ({ name: 'p', type: 'float', ...extra });

const CONFIGS: Record<string, unknown> = {
  'empty: every default, durations and sizes among them': {},
  'durations and sizes at every level': {
    http: { body_limit: '512KB' },
    mqtt: { bridge: { url: 'mqtts://up:8883', topic_prefix: 'a', queue_max: '2 MiB' } },
    shadow: { default_ttl: '1h30m', check_interval: '500ms', persist_interval: '1.5s' },
    history: { retention: '14d', max_disk: '1GB' },
    export: { shadow: { targets: ['http', 'file'], http: { url: 'http://x/y', timeout: '2s' }, file: { path: '/tmp/s', max_size: '1mb' } } },
    buses: [
      { id: 'rtu', driver: 'modbus-rtu', port: '/dev/ttyUSB0', timeout: '250ms' },
      { id: 'tcp', driver: 'modbus-tcp', host: 'h' },
      { id: 'sim', driver: 'simulator' },
      { id: 'pins', driver: 'gpio' },
    ],
    models: {
      m: {
        points: [
          point({ poll: '100ms', sim: { fn: 'sine', min: 0, max: 1 } }),
          point({ sim: { fn: 'sine', min: 0, max: 1, period: '2m' } }),
          point({ gpio: { pin: 17, direction: 'in', debounce: '20ms' } }),
          point({ sim: { fn: 'counter' } }),
        ],
      },
    },
    devices: [{ id: 'd', model: 'm', bus: 'sim', ttl: '45s', poll: '250ms' }, { id: 'e', model: 'm', bus: 'sim' }],
  },
  'bad texts: refused, valid neighbours still converted': {
    shadow: { default_ttl: '5', check_interval: 5, persist_interval: ' 30s' },
    history: { max_disk: '64XB', retention: '' },
    devices: [{ id: 'd', model: 'm', bus: 'b', poll: '1 s', ttl: '2m' }],
  },
  'a duration in the branch of another driver stays text': {
    buses: [
      { id: 'sim', driver: 'simulator', timeout: '5s' },
      { id: 'can', driver: 'can', timeout: '5s' },
      { id: 'none', timeout: '5s' },
      { id: 'rtu', driver: 'modbus-rtu', port: '/dev/x', timeout: '5s', host: 'h' },
    ],
  },
  'wrong shapes around durations': {
    shadow: [], history: 'x', buses: { id: 'b' }, devices: [null, 'd', { id: 'd', poll: {} }],
    models: { m: { points: [point({ sim: { fn: 'constant', value: 1, period: '1s' } }), point({ sim: 'sine' }), point({ sim: { period: '1s' } })] } },
  },
  'a model called __proto__': JSON.parse('{"models": {"__proto__": {"points": [{"name": "p", "type": "int", "poll": "1s"}]}}}'),
  'board/demo.json': readJson('board/demo.json'),
};

test('the same verdict, problems and converted data as the run-time compiled schema', () => {
  for (const [label, raw] of Object.entries(CONFIGS)) agree('config', raw, label);
  for (const file of readdirSync(`${REPO}board/examples`).filter((f) => f.endsWith('.json'))) agree('config', readJson(`board/examples/${file}`), file);
});

test('the same for every board/models file and a broken model', () => {
  // As the loader hands them on: a variant file takes its points from its base.
  for (const [name, { raw }] of Object.entries(readModelLibrary(`${REPO}board/models`).models)) agree('model', raw, `${name}.json`);
  agree('model', { points: [point({ poll: 'soon', gpio: { pin: 'P1-11', direction: 'in', debounce: '5ms' } }), point({ poll: '1m' })], x: 1 }, 'broken model');
});

test('values the walk must reach: then-branches, defaults, items, additionalProperties', () => {
  const data = agree('config', CONFIGS['durations and sizes at every level'], 'every level') as {
    http: { body_limit: number };
    mqtt: { bridge: { queue_max: number } };
    shadow: { default_ttl: number; persist_interval: number };
    buses: Array<{ timeout?: number }>;
    models: { m: { points: Array<{ poll?: number; sim?: { period?: number }; gpio?: { debounce?: number } }> } };
    devices: Array<{ ttl?: number; poll: number }>;
  };
  assert.is(data.http.body_limit, 512 * 1024);
  assert.is(data.mqtt.bridge.queue_max, 2 * 1024 ** 2);
  assert.is(data.shadow.default_ttl, 5_400_000);
  assert.is(data.shadow.persist_interval, 1500);
  assert.equal(data.buses.map((b) => b.timeout), [250, 1000, undefined, undefined]);
  const points = data.models.m.points;
  assert.equal([points[0]!.poll, points[0]!.sim!.period, points[1]!.sim!.period, points[2]!.gpio!.debounce], [100, 60_000, 120_000, 20]);
  assert.equal(data.devices.map((d) => [d.ttl, d.poll]), [[45_000, 250], [undefined, 1000]]);
});

test('bad texts are reported as before and stay text', () => {
  const bad = structuredClone(CONFIGS['bad texts: refused, valid neighbours still converted']);
  const { ok, errors } = validateConfigShape(bad);
  assert.not.ok(ok);
  const problems = formatAjvErrors(errors);
  for (const expected of [
    'shadow.default_ttl: must be a duration like 500ms, 30s, 5m, 1h30m, 14d (got "5")',
    'shadow.check_interval: must be string (got 5)',
    'history.max_disk: must be a size like 512KB, 64MB, 1GB (got "64XB")',
    'devices[0].poll: must be a duration like 500ms, 30s, 5m, 1h30m, 14d (got "1 s")',
  ]) assert.ok(problems.includes(expected), `missing "${expected}" in\n${problems.join('\n')}`);
  const data = bad as { shadow: Record<string, unknown>; devices: Array<Record<string, unknown>> };
  assert.equal(data.shadow, { default_ttl: '5', check_interval: 5, persist_interval: 30_000, max_devices: 1024, max_points: 65536 });
  assert.equal([data.devices[0]!.poll, data.devices[0]!.ttl], ['1 s', 120_000]);
});

test.run();
