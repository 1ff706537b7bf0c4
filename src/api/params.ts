/** Validation of request parameters, with the clear texts of DESIGN §4 (`id is required`, `values[2].name is required`). */
import type { WriteRequest } from '../core/io.js';
import { badRequest } from '../core/errors.js';
import type { Fields } from './body.js';

/** First source that has the field wins (body before query for POST). */
export function pick(sources: readonly (Fields | undefined)[], name: string): unknown {
  for (const s of sources) {
    if (s && Object.hasOwn(s, name) && s[name] !== undefined) return s[name];
  }
  return undefined;
}

/** A required text parameter (device id, point name): present, one value, non-empty. */
export function requireText(value: unknown, name: string): string {
  if (value === undefined || value === null || value === '') throw badRequest(`${name} is required`);
  if (Array.isArray(value)) throw badRequest(`${name} must be given once`);
  if (typeof value !== 'string') throw badRequest(`${name} must be a string`);
  return value;
}

/**
 * A point value: text from a query or form, or a JSON number/string/boolean. The DeviceIO coerces it by
 * point type, so it is passed through; only shapes no point type can take are refused here.
 */
export function requireValue(value: unknown, name: string): unknown {
  if (value === undefined || value === null || value === '') throw badRequest(`${name} is required`);
  if (Array.isArray(value) && name === 'value') throw badRequest(`${name} must be given once`);
  const t = typeof value;
  if (t !== 'string' && t !== 'number' && t !== 'boolean') throw badRequest(`${name} must be a number, string or boolean`);
  return value;
}

/** The batch form's `values: [{name, value}, …]`, checked whole before anything is written. */
export function requireValues(value: unknown): WriteRequest[] {
  if (!Array.isArray(value) || value.length === 0) throw badRequest('values must be a non-empty array');
  return value.map((entry: unknown, i) => {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw badRequest(`values[${i}] must be an object`);
    const e = entry as Fields;
    return { name: requireText(e['name'], `values[${i}].name`), value: requireValue(e['value'], `values[${i}].value`) };
  });
}
