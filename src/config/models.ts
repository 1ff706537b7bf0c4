/**
 * The model library: every board/models/*.json, keyed by file name without `.json`. Read synchronously because
 * it happens once at start (and in check-config), before anything else runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeJsonError } from './json.js';

/** board/models of this checkout or install: `../../board/models` from both src/config/ and dist/config/. */
export const DEFAULT_MODELS_DIR = fileURLToPath(new URL('../../board/models/', import.meta.url));

export interface LibraryModel {
  /** Parsed but not yet validated file content. */
  raw: unknown;
  /** How problems name the file: `board/models/x.json`. */
  label: string;
}

export interface ModelLibrary {
  models: Record<string, LibraryModel>;
  /** Files that could not be read or parsed. */
  problems: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A variant file (`"variant_of": "<model>"`) is that model with other identity: its own top-level fields
 * (name, description, source, covers, …) over the base's, and its `persona.constants` over the base's
 * constants (SunSpec meters 201, 202, 204 are 203's registers with another model ID). It has no points of
 * its own: a map written once cannot drift between its copies.
 */
function resolveVariants(library: ModelLibrary): void {
  // Decided before any is resolved, so the answer does not depend on the order of the files.
  const variants = new Set(Object.entries(library.models).filter(([, m]) => isObject(m.raw) && m.raw['variant_of'] !== undefined).map(([n]) => n));
  for (const [name, entry] of Object.entries(library.models)) {
    const raw = entry.raw;
    if (!isObject(raw) || raw['variant_of'] === undefined) continue;
    const baseName = raw['variant_of'];
    const base = typeof baseName === 'string' && Object.hasOwn(library.models, baseName) ? library.models[baseName]!.raw : undefined;
    const problem = typeof baseName !== 'string' ? 'must name a library model'
      : !isObject(base) ? `no library model "${baseName}"`
        : variants.has(baseName) ? `"${baseName}" is itself a variant; name its base`
          : raw['points'] !== undefined ? 'a variant takes its points from its base (leave "points" out)' : undefined;
    if (problem || !isObject(base)) {
      library.problems.push(`${entry.label}: variant_of: ${problem}`);
      delete library.models[name];
      continue;
    }
    const { variant_of: _ignored, persona, ...own } = raw;
    const basePersona = isObject(base['persona']) ? base['persona'] : {};
    const ownConstants = isObject(persona) && isObject(persona['constants']) ? persona['constants'] : {};
    const constants = { ...(isObject(basePersona['constants']) ? basePersona['constants'] : {}), ...ownConstants };
    entry.raw = { ...structuredClone(base), ...own, ...(base['persona'] !== undefined || persona !== undefined ? { persona: { ...structuredClone(basePersona), constants } } : {}) };
  }
}

/** Reads every `*.json` in `dir` (default board/models), variants resolved. A missing directory is an empty library. */
export function readModelLibrary(dir: string = DEFAULT_MODELS_DIR): ModelLibrary {
  const labelDir = path.resolve(dir) === path.resolve(DEFAULT_MODELS_DIR) ? 'board/models' : dir.replace(/\/+$/, '');
  const library: ModelLibrary = { models: {}, problems: [] };
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') library.problems.push(`${labelDir}: cannot read models directory: ${(e as Error).message}`);
    return library;
  }
  for (const file of files) {
    const label = `${labelDir}/${file}`;
    let text: string;
    try {
      text = readFileSync(path.join(dir, file), 'utf8');
    } catch (e) {
      library.problems.push(`${label}: (root): cannot read: ${(e as Error).message}`);
      continue;
    }
    try {
      library.models[file.slice(0, -'.json'.length)] = { raw: JSON.parse(text.replace(/^\uFEFF/, '')), label };
    } catch (e) {
      library.problems.push(`${label}: (root): ${describeJsonError(text, e)}`);
    }
  }
  resolveVariants(library);
  return library;
}
