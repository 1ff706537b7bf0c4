/** The precompiled validator (src/config/schema-validators.js): current, self-contained, and ajv off the start path. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { analyseSchema, generate, OUTPUT_DTS, OUTPUT_JS } from '../../scripts/gen-validator.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

test('schema-validators.js is what scripts/gen-validator.ts makes of schema.json now', () => {
  const { js, dts } = generate();
  const stale = 'stale versus schema.json: run node --import tsx scripts/gen-validator.ts (make build does) and commit the result';
  assert.ok(readFileSync(OUTPUT_JS, 'utf8') === js, `src/config/schema-validators.js is ${stale}`);
  assert.ok(readFileSync(OUTPUT_DTS, 'utf8') === dts, `src/config/schema-validators.d.ts is ${stale}`);
});

test('the module imports nothing: plain ESM that needs neither ajv nor require', () => {
  const js = readFileSync(OUTPUT_JS, 'utf8');
  assert.not.match(js, /^\s*import\s/m);
  assert.not.match(js, /\brequire\(/);
  assert.match(js, /^export const validateConfig = /m);
  assert.match(js, /^export const conditions = \{$/m);
});

test('loading the config code loads no part of ajv', () => {
  const probe = `
    import { createRequire } from 'node:module';
    const { validateConfig } = await import(process.argv[1]);
    validateConfig({ shadow: { default_ttl: '5s' } }, { env: {}, models: {} });
    const cache = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify(cache.filter((f) => f.includes('/node_modules/ajv/'))));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe, `${REPO}src/config/load.ts`],
    { cwd: REPO, encoding: 'utf8', timeout: 20_000 });
  assert.is(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout), []);
});

test('the unit walk evaluates every if of schema.json and follows every x-unit', () => {
  const schema = JSON.parse(readFileSync(`${REPO}src/config/schema.json`, 'utf8')) as Record<string, unknown>;
  const { conditions, problems } = analyseSchema(schema);
  assert.equal(problems, []);
  assert.equal(conditions, ['/definitions/bus/allOf/0/if', '/definitions/bus/allOf/1/if']
    // modbus-rtu's rs485 "kernel" / "gpio" (they test `mode`, which has no default)
    .concat([0, 1].map((i) => `/definitions/bus/allOf/1/then/properties/rs485/allOf/${i}/if`))
    .concat(['/definitions/bus/allOf/2/if', '/definitions/bus/allOf/3/if', '/definitions/gpio_point/if'])
    .concat([0, 1].map((i) => `/definitions/server/allOf/${i}/if`), ['/definitions/server_unit/allOf/0/if'])
    .concat([0, 1, 2, 3].map((i) => `/definitions/sim_point/allOf/${i}/if`)));
});

test('a schema with an x-unit the walk would miss is refused', () => {
  const schema = {
    definitions: { d: { type: 'string', 'x-unit': 'duration' } },
    properties: {
      a: { oneOf: [{ $ref: '#/definitions/d' }, { type: 'number' }] },
      b: { patternProperties: { '^x': { $ref: '#/definitions/d' } } },
      c: { items: [{ $ref: '#/definitions/d' }] },
      ok: { allOf: [{ if: { type: 'object' }, then: { properties: { t: { $ref: '#/definitions/d' } } } }] },
    },
  };
  const { conditions, problems } = analyseSchema(schema);
  assert.is(problems.length, 1, problems.join('\n')); // one node, reported once, with the first way to it
  assert.match(problems[0]!, /^#\/definitions\/d: x-unit reached through #\/properties\/a\/oneOf, which src\/config\/units\.ts does not follow/);
  const inIf = analyseSchema({ properties: { a: { if: { properties: { t: { type: 'string', 'x-unit': 'size' } } } } } });
  assert.match(inIf.problems.join('\n'), /^#\/properties\/a\/if\/properties\/t: x-unit reached through #\/properties\/a\/if,/);
  assert.equal(conditions, ['/properties/ok/allOf/0/if']);
  assert.equal(analyseSchema({ properties: { a: { $ref: 'other.json#/d' } } }).problems, ['#/properties/a: $ref "other.json#/d" is not a local ref the unit walk can follow']);
});

test.run();
