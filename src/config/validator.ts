/**
 * The compiled schema and the translation of ajv's errors into `path: message` lines a user can act on.
 * schema.json is the single source of shape and defaults; this file adds no rules of its own.
 */
import { readFileSync } from 'node:fs';
import type { ErrorObject } from 'ajv';
import { conditions, validateBoard, validateConfig, validateModel, type SchemaValidator } from './schema-validators.js';
import { formatPath } from './path.js';
import { unitConverter } from './units.js';

export const SCHEMA_URL = new URL('./schema.json', import.meta.url);

/*
 * schema-validators.js is schema.json compiled ahead of time by ajv (scripts/gen-validator.ts): compiling it here
 * cost more start-up time than anything else. The unit walk reads the schema itself (a JSON parse, well under
 * a millisecond).
 */
const convertUnits = unitConverter(JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as Record<string, unknown>, conditions);

/** Runs a validator, then turns every valid duration/size text into ms/bytes (invalid text stays: its error names it). */
function withUnits(fn: SchemaValidator, pointer: string): (data: unknown) => { ok: boolean; errors: ErrorObject[] } {
  return (data) => {
    const ok = fn(data);
    const errors = [...(fn.errors ?? [])];
    convertUnits(pointer, data);
    return { ok, errors };
  };
}

/** Validates a whole config in place: fills defaults, converts durations/sizes. */
export const validateConfigShape = withUnits(validateConfig, '');
/** Validates one model (a board/models/*.json file) in place. */
export const validateModelShape = withUnits(validateModel, '/definitions/model');

/** Shape problems of one board definition (board/boards/*.json, board.schema.json) as `path: message`. */
export function boardShapeProblems(raw: unknown): string[] {
  return validateBoard(raw) ? [] : formatAjvErrors(validateBoard.errors);
}

// Patterns are precise but unreadable; these say what they mean.
const PATTERN_TEXT: Record<string, string> = {
  '^[A-Za-z0-9_.-]{1,64}$': 'must be 1-64 characters of A-Z a-z 0-9 _ . -',
  '^([0-9]+(\\.[0-9]+)?(ms|s|m|h|d))+$': 'must be a duration like 500ms, 30s, 5m, 1h30m, 14d',
  '^[0-9]+(\\.[0-9]+)?\\s*([KkMmGg][Ii]?)?[Bb]$': 'must be a size like 512KB, 64MB, 1GB',
  '^auto$': 'must be "auto" or an integer >= 0',
  '^([0134][0-9]{4,5}|0[xX][0-9a-fA-F]{1,4})$': 'must be an integer address, hex text like "0x0156" or reference notation like "40001", "30001", "10001", "00001"',
  '^0[xX][0-9a-fA-F]{1,16}$': 'must be a number or hex text like "0x7FFFFFFF"',
  '^((P1|J8)-[0-9]{1,2}|GPIO[0-9]{1,2})$': 'must be a BCM number 0-53 or a pin name like "P1-11" or "GPIO17"',
  '^[^#+]+$': 'must not contain MQTT wildcards # or +',
  '^(mqtts?|wss?|tcp|tls)://.+': 'must be a broker URL like mqtts://host:8883',
  '^https?://.+': 'must be an http:// or https:// URL',
  '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$': 'must be a host name: 1-63 letters, digits or -, not starting or ending with -',
  '^[^\\u0000-\\u001f\\u007f]+$': 'must not contain control characters (newlines, tabs)',
  '^([ -~]{8,63}|[0-9A-Fa-f]{64})$': 'must be a passphrase of 8-63 printable ASCII characters or 64 hex digits',
  '^[A-Z]{2}$': 'must be a two-letter country code in capitals, like DE or US',
};

// Values a problem line must not echo: problems go to the console, the journal and the boot status file.
const SECRET_PATH = /\/(psk|password|tokens(\/\d+)?)$/;

const shown = (data: unknown): string => {
  const text = JSON.stringify(data);
  return text === undefined ? String(data) : text.length > 40 ? `${text.slice(0, 37)}...` : text;
};

/** The known property closest to a typo (`baudrate` → `baud_rate`), if any is close. */
function suggest(name: string, known: string[]): string | undefined {
  const squash = (s: string): string => s.toLowerCase().replace(/[_-]/g, '');
  const exact = known.find((k) => squash(k) === squash(name));
  if (exact) return exact;
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** One `path: message` line for an ajv error, or undefined for errors that only repeat others. */
function formatError(e: ErrorObject, prefix: string): string | undefined {
  const at = (extra?: string): string => prefix + formatPath(e.instancePath, extra);
  const params = e.params as Record<string, unknown>;
  const got = SECRET_PATH.test(e.instancePath) ? '' : ` (got ${shown(e.data)})`;
  // "must match then schema" and "property name must be valid" wrap errors that are reported on their own.
  if (e.keyword === 'if' || e.keyword === 'propertyNames') return undefined;
  const named = (message: string): string =>
    e.propertyName !== undefined ? `${at()}: name "${e.propertyName}" ${message}` : `${at()}: ${message}`;
  switch (e.keyword) {
    case 'required':
      return `${at(String(params.missingProperty))}: is required`;
    case 'additionalProperties': {
      const name = String(params.additionalProperty);
      const known = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const hint = suggest(name, known);
      return `${at()}: must not have property "${name}"${hint ? ` (did you mean "${hint}"?)` : ''}`;
    }
    case 'enum':
      return `${at()}: must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}${got}`;
    case 'const':
      return `${at()}: must be ${shown(params.allowedValue)}`;
    case 'type':
      return `${at()}: must be ${String(params.type).split(',').join(' or ')}${got}`;
    case 'pattern': {
      const text = PATTERN_TEXT[String(params.pattern)] ?? `must match ${String(params.pattern)}`;
      return named(e.propertyName !== undefined ? text : `${text}${got}`);
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${at()}: ${e.message ?? 'out of range'}${got}`;
    case 'minItems':
      return `${at()}: must have at least ${String(params.limit)} item(s)`;
    case 'uniqueItems': {
      const list = e.data as unknown[];
      return `${at()}: must not list ${shown(list[Number(params.i)])} twice`;
    }
    default:
      return named(e.message ?? `failed ${e.keyword}`);
  }
}

/** Every ajv error as a `path: message` line (each once), with an optional prefix such as a model file name. */
export function formatAjvErrors(errors: readonly ErrorObject[] | null | undefined, prefix = ''): string[] {
  const lines = (errors ?? []).map((e) => formatError(e, prefix)).filter((line): line is string => line !== undefined);
  return [...new Set(lines)];
}
