/**
 * Durations and sizes are text in the file and numbers (ms, bytes) in the loaded config. schema.json marks them
 * with `x-unit`, so the schema stays the one place that knows which fields they are (also inside if/then
 * branches and defaults). For ajv the keyword is an annotation: the precompiled validator checks the text (its
 * `pattern`) and cannot carry a converting keyword. After validation this walk follows the data along the
 * schema the way ajv applied it and converts every text a node with `x-unit` covers. Converting during
 * validation would let `type`/`pattern` see the number instead of the text.
 */
import { parseDuration, parseSize } from '../core/duration.js';

type Schema = Record<string, unknown>;

/** A compiled `if` subschema: whether the data matches it. */
export type Condition = (data: unknown) => boolean;

/**
 * The keywords whose subschemas the walk descends into (`items` in its one-schema form; `if` is only evaluated,
 * through its compiled condition). An `x-unit` behind any other (oneOf, anyOf, not, patternProperties, an `if`
 * itself, …) would silently stay text, so scripts/gen-validator.ts refuses such a schema.
 */
export const FOLLOWED_KEYWORDS: ReadonlySet<string> = new Set(['$ref', 'properties', 'additionalProperties', 'items', 'allOf', 'then', 'else']);

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isObject = isSchema;

/** A JSON pointer segment (`~` → `~0`, `/` → `~1`). */
export const pointerSegment = (key: string | number): string => String(key).replace(/~/g, '~0').replace(/\//g, '~1');

/** The subschema at a JSON pointer of `root` ('' = root), or undefined. */
export function schemaAt(root: Schema, pointer: string): Schema | undefined {
  let node: unknown = root;
  for (const part of pointer.split('/').slice(1)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    node = isSchema(node) || Array.isArray(node) ? (node as Record<string, unknown>)[key] : undefined;
  }
  return isSchema(node) ? node : undefined;
}

/**
 * A converter for one schema: `convert(pointer, data)` converts, in place, every duration/size text in `data`
 * (validated against the subschema at `pointer`) whose schema node has `x-unit`. Invalid text stays as it is:
 * the validator's pattern error already names it.
 *
 * `conditions` are the schema's `if` subschemas compiled by ajv, by JSON pointer, so the walk takes exactly the
 * branches ajv took. They see the data after validation, with every default filled in, where ajv's own `if` may
 * have run before a sibling's default was: an `if` must not test a property that has a default (schema.json's
 * test `driver` and `fn`, which have none). Texts are converted only after every `if` above them has run.
 */
export function unitConverter(root: Schema, conditions: Readonly<Record<string, Condition>>): (pointer: string, data: unknown) => void {
  // Conditions by the schema node that holds the `if`: the walk deals in nodes, not pointers.
  const conditionOf = new Map<Schema, Condition>();
  for (const [pointer, condition] of Object.entries(conditions)) {
    const owner = pointer.endsWith('/if') ? schemaAt(root, pointer.slice(0, -3)) : undefined;
    if (owner) conditionOf.set(owner, condition);
  }

  const refs = new Map<string, Schema>();
  const resolve = (ref: string): Schema => {
    let found = refs.get(ref);
    if (!found) {
      found = ref.startsWith('#') ? schemaAt(root, decodeURIComponent(ref.slice(1))) : undefined;
      if (!found) throw new Error(`x-unit walk: cannot follow $ref "${ref}" (only local refs)`);
      refs.set(ref, found);
    }
    return found;
  };

  // Whether a subschema can hold an x-unit at all: most of a config (ids, names, whole points) cannot, and
  // skipping it keeps the walk to a few milliseconds for 1,000 devices.
  const reach = new Map<Schema, boolean>();
  const reachesUnits = (schema: Schema): boolean => {
    const known = reach.get(schema);
    if (known !== undefined) return known;
    reach.set(schema, true); // a cycle back to this node: assume it may, never skip on a guess
    const subs: unknown[] = [
      ...(typeof schema.$ref === 'string' ? [resolve(schema.$ref)] : []),
      ...(isSchema(schema.properties) ? Object.values(schema.properties) : []),
      ...(Array.isArray(schema.allOf) ? schema.allOf : []),
      schema.additionalProperties, schema.items, schema.then, schema.else,
    ];
    const result = typeof schema['x-unit'] === 'string' || subs.some((sub) => isSchema(sub) && reachesUnits(sub));
    reach.set(schema, result);
    return result;
  };

  /** Adds `schema` and every subschema that applies at the same place in the data (ref, allOf, the taken branch). */
  const collect = (schema: Schema, data: unknown, out: Schema[]): void => {
    out.push(schema);
    if (typeof schema.$ref === 'string') collect(resolve(schema.$ref), data, out);
    if (Array.isArray(schema.allOf)) for (const sub of schema.allOf) if (isSchema(sub)) collect(sub, data, out);
    if (isSchema(schema.if)) {
      const condition = conditionOf.get(schema);
      if (!condition) throw new Error('x-unit walk: an `if` has no compiled condition (regenerate: node --import tsx scripts/gen-validator.ts)');
      const taken = condition(data) ? schema.then : schema.else;
      if (isSchema(taken)) collect(taken, data, out);
    }
  };

  /** A node's subschemas for properties and items, only those where units may be (computed once per node). */
  interface Children { props: ReadonlyArray<readonly [string, Schema]>; additional?: Schema; items?: Schema }
  const children = new Map<Schema, Children>();
  const childrenOf = (schema: Schema): Children => {
    let found = children.get(schema);
    if (!found) {
      const keep = (sub: unknown): Schema | undefined => (isSchema(sub) && reachesUnits(sub) ? sub : undefined);
      const props = Object.entries(isSchema(schema.properties) ? schema.properties : {})
        .flatMap(([name, sub]) => (keep(sub) ? [[name, sub as Schema] as const] : []));
      children.set(schema, (found = { props, additional: keep(schema.additionalProperties), items: keep(schema.items) }));
    }
    return found;
  };

  const walk = (start: readonly Schema[], data: unknown, parent: Record<string | number, unknown> | undefined, key: string | number): void => {
    const nodes: Schema[] = [];
    for (const schema of start) collect(schema, data, nodes);
    if (typeof data === 'string') {
      const unit = nodes.find((schema) => typeof schema['x-unit'] === 'string')?.['x-unit'];
      if (unit === undefined || parent === undefined) return;
      try {
        parent[key] = unit === 'size' ? parseSize(data) : parseDuration(data);
      } catch {
        // the pattern error already reports it
      }
    } else if (Array.isArray(data)) {
      const items = nodes.flatMap((schema) => {
        const sub = childrenOf(schema).items;
        return sub ? [sub] : [];
      });
      if (items.length > 0) data.forEach((item, i) => walk(items, item, data as unknown as Record<number, unknown>, i));
    } else if (isObject(data)) {
      // Which subschemas apply to each property: a property listed in a node's `properties`, else its `additionalProperties`.
      const byName = new Map<string, Schema[]>();
      const add = (name: string, sub: Schema): void => {
        const list = byName.get(name);
        if (list) list.push(sub);
        else byName.set(name, [sub]);
      };
      for (const schema of nodes) {
        const { props, additional } = childrenOf(schema);
        for (const [name, sub] of props) if (Object.hasOwn(data, name)) add(name, sub);
        if (!additional) continue;
        const listed = isSchema(schema.properties) ? schema.properties : {};
        for (const name of Object.keys(data)) if (!Object.hasOwn(listed, name)) add(name, additional);
      }
      for (const [name, subs] of byName) walk(subs, data[name], data, name);
    }
  };

  return (pointer, data) => {
    const schema = schemaAt(root, pointer);
    if (!schema) throw new Error(`x-unit walk: schema has nothing at "${pointer}"`);
    if (reachesUnits(schema)) walk([schema], data, undefined, '');
  };
}
