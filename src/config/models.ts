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

/** Reads every `*.json` in `dir` (default board/models). A missing directory is an empty library. */
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
  return library;
}
