/**
 * Writes src/config/schema-validators.js (and its .d.ts): src/config/schema.json compiled by ajv into standalone
 * code, so the gateway validates its config without importing ajv or compiling the schema at start (that was
 * the largest single cost of start-to-ready, 110–160 ms).
 *
 *   node --import tsx scripts/gen-validator.ts           rewrite the files when they differ
 *   node --import tsx scripts/gen-validator.ts --check   exit 1 when they are stale
 *
 * The output is committed rather than generated into dist/ only: the tests and `tsx src/main.ts` import
 * src/config/ directly, on a fresh clone before any build, and must validate with this same code. `make build`
 * regenerates it (writing only on change), and test/config/schema-validators.test.ts fails while it is stale
 * versus schema.json, the ajv version or this script.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import AjvModule from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { FOLLOWED_KEYWORDS, pointerSegment, schemaAt } from '../src/config/units.js';

type Schema = Record<string, unknown>;
// ajv is CommonJS: under NodeNext the default import is module.exports, whose `default` is the class.
type AjvClass = typeof AjvModule.default;
const Ajv: AjvClass = (AjvModule as unknown as { default?: AjvClass }).default ?? (AjvModule as unknown as AjvClass);
const standaloneCode = standaloneModule.default;
const require = createRequire(import.meta.url);

const SCHEMA_FILE = fileURLToPath(new URL('../src/config/schema.json', import.meta.url));
/** Board definitions (board/boards/*.json) have their own small schema, compiled into the same module. */
const BOARD_SCHEMA_FILE = fileURLToPath(new URL('../src/config/board.schema.json', import.meta.url));
export const OUTPUT_JS = fileURLToPath(new URL('../src/config/schema-validators.js', import.meta.url));
export const OUTPUT_DTS = fileURLToPath(new URL('../src/config/schema-validators.d.ts', import.meta.url));

/** How the config has always been validated: every problem at once, defaults filled, errors with their data. */
export const AJV_OPTIONS = { allErrors: true, useDefaults: true, verbose: true, allowUnionTypes: true, strict: true } as const;

/**
 * ajv's runtime helpers the code may call, inlined so the module imports nothing (ESM has no `require`, and the
 * start path loads no part of ajv). Each is one self-contained function; another helper needs checking first.
 */
const INLINABLE = new Set(['equal', 'ucs2length']);

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const SCHEMA_VALUED = ['additionalItems', 'additionalProperties', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'items'];
const SCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'items'];
// `definitions` is not walked itself: a definition applies only where a $ref names it.
const SCHEMA_MAPS = ['properties', 'patternProperties', 'dependencies'];

/**
 * The pointers of the `if` subschemas the unit walk evaluates, and where an `x-unit` sits behind a keyword the
 * walk does not follow (those would stay text: refused).
 */
export function analyseSchema(root: Schema): { conditions: string[]; problems: string[] } {
  const conditions = new Set<string>();
  const problems: string[] = [];
  const seen = new Set<string>();
  // `via`: where the path from the root first left the followed keywords (undefined while it has not).
  const visit = (schema: unknown, pointer: string, via: string | undefined): void => {
    const key = `${via === undefined}#${pointer}`;
    if (!isSchema(schema) || seen.has(key)) return;
    seen.add(key);
    if (schema['x-unit'] !== undefined && via !== undefined) {
      problems.push(`#${pointer}: x-unit reached through #${via}, which src/config/units.ts does not follow (it follows ${[...FOLLOWED_KEYWORDS].join(', ')})`);
    }
    for (const [keyword, sub] of Object.entries(schema)) {
      const here = `${pointer}/${keyword}`;
      const next = via ?? (FOLLOWED_KEYWORDS.has(keyword) && !(keyword === 'items' && Array.isArray(sub)) ? undefined : here);
      if (keyword === '$ref' && typeof sub === 'string') {
        const target = sub.startsWith('#') ? decodeURIComponent(sub.slice(1)) : undefined;
        if (target === undefined || !schemaAt(root, target)) problems.push(`#${pointer}: $ref "${sub}" is not a local ref the unit walk can follow`);
        else visit(schemaAt(root, target), target, next);
      } else if (keyword === 'if' && via === undefined && isSchema(sub)) {
        conditions.add(here);
        visit(sub, here, here);
      } else if (SCHEMA_VALUED.includes(keyword) && isSchema(sub)) {
        visit(sub, here, next);
      } else if (SCHEMA_ARRAYS.includes(keyword) && Array.isArray(sub)) {
        sub.forEach((item, i) => visit(item, `${here}/${i}`, next));
      } else if (SCHEMA_MAPS.includes(keyword) && isSchema(sub)) {
        for (const [name, item] of Object.entries(sub)) visit(item, `${here}/${pointerSegment(name)}`, next);
      }
    }
  };
  visit(root, '', undefined);
  return { conditions: [...conditions].sort(), problems };
}

/** `require("ajv/dist/runtime/x").default` → the helper's own source. */
function inlineRuntime(code: string): string {
  const out = code.replace(/require\("ajv\/dist\/runtime\/([a-z0-9_]+)"\)\.default/g, (_call, name: string) => {
    if (!INLINABLE.has(name)) throw new Error(`gen-validator: the code calls ajv's runtime "${name}", which is not known to be inlinable`);
    return String((require(`ajv/dist/runtime/${name}`) as { default: (...args: never[]) => unknown }).default);
  });
  if (/\brequire\(/.test(out)) throw new Error('gen-validator: the code still requires a module');
  return out;
}

const DTS = `// Generated by scripts/gen-validator.ts from schema.json: do not edit.
import type { ErrorObject } from 'ajv';

/** An ajv validate function: fills defaults in place; \`errors\` holds the last call's problems. */
export interface SchemaValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** The whole config (schema.json). */
export declare const validateConfig: SchemaValidator;
/** One model (#/definitions/model, a board/models/*.json file). */
export declare const validateModel: SchemaValidator;
/** One board definition (board.schema.json, a board/boards/*.json file). */
export declare const validateBoard: SchemaValidator;
/** The schema's \`if\` subschemas by JSON pointer, for the unit walk (units.ts) to take the branch ajv took. */
export declare const conditions: Readonly<Record<string, SchemaValidator>>;
`;

/** The generated module's text (.js and .d.ts). */
export function generate(): { js: string; dts: string } {
  const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Schema;
  const { conditions, problems } = analyseSchema(schema);
  if (problems.length > 0) throw new Error(`gen-validator: schema.json:\n  ${problems.join('\n  ')}`);

  const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true, esm: true, lines: true } });
  // An annotation for ajv (the text is checked by the pattern beside it); units.ts converts it after validation.
  ajv.addKeyword({ keyword: 'x-unit', schemaType: 'string', metaSchema: { enum: ['duration', 'size'] } });
  ajv.addSchema(schema, 'config');
  ajv.addSchema(JSON.parse(readFileSync(BOARD_SCHEMA_FILE, 'utf8')) as Schema, 'board');
  const exportsByName: Record<string, string> = { validateConfig: 'config', validateModel: 'config#/definitions/model', validateBoard: 'board' };
  conditions.forEach((pointer, i) => {
    exportsByName[`condition${i}`] = `config#${pointer.split('/').map(encodeURIComponent).join('/')}`;
  });
  const code = inlineRuntime(standaloneCode(ajv, exportsByName));
  const ajvVersion = (require('ajv/package.json') as { version: string }).version;
  const js = [
    `// Generated by scripts/gen-validator.ts from schema.json (ajv ${ajvVersion} standalone code): do not edit.`,
    '// `make build` regenerates it; test/config/schema-validators.test.ts fails while it is stale.',
    code,
    `export const conditions = {\n${conditions.map((pointer, i) => `  ${JSON.stringify(pointer)}: condition${i},`).join('\n')}\n};`,
    '',
  ].join('\n');
  return { js, dts: DTS };
}

const read = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const { js, dts } = generate();
  const stale = [[OUTPUT_JS, js], [OUTPUT_DTS, dts]].filter(([file, text]) => read(file!) !== text);
  if (process.argv.includes('--check')) {
    for (const [file] of stale) console.error(`${file} is stale: run node --import tsx scripts/gen-validator.ts`);
    process.exit(stale.length > 0 ? 1 : 0);
  }
  for (const [file, text] of stale) {
    writeFileSync(file!, text!);
    console.log(`gen-validator: wrote ${file}`);
  }
}
