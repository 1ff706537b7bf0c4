/**
 * What an edited config file undoes of the console's work. The console's changes are the difference
 * between the file's config it started from (`base`) and the config it last applied (`console`); each one
 * the new file does not carry is reported by path: a bus, a device, a model, an MQTT user as a whole
 * (`devices[meter-2]`, `mqtt.users[ha]`), other settings by their key (`mqtt.homeassistant`, `http.port`).
 */
import { sameValue } from '../util/same-value.js';

export interface DriftEntry {
  path: string;
  /** dropped: the console added it, the file lacks it; changed: the file has another value; back: the console removed it, the file has it. */
  change: 'dropped' | 'changed' | 'back';
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Lists whose items are matched by a key, not by position. */
const KEYED: Record<string, string> = { buses: 'id', devices: 'id', 'mqtt.users': 'username' };

/** The config as units: `path → value`, a unit being a keyed list's item, a model, or a section's key. */
function units(raw: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!isObj(raw)) return out;
  const walk = (value: unknown, at: string, depth: number): void => {
    const key = KEYED[at];
    if (key && Array.isArray(value) && value.every((v) => isObj(v) && typeof v[key] === 'string')) {
      for (const item of value as Record<string, unknown>[]) out.set(`${at}[${String(item[key])}]`, item);
      return;
    }
    // The root and each section are opened: a section's keys (models by name) are the units.
    if (isObj(value) && depth <= 1) {
      for (const [k, v] of Object.entries(value)) if (v !== undefined) walk(v, at ? `${at}.${k}` : k, depth + 1);
      return;
    }
    out.set(at, value);
  };
  walk(raw, '', 0);
  return out;
}

export function consoleDrift(base: unknown, consoleRaw: unknown, fileRaw: unknown): DriftEntry[] {
  const b = units(base);
  const c = units(consoleRaw);
  const f = units(fileRaw);
  const out: DriftEntry[] = [];
  for (const path of new Set([...b.keys(), ...c.keys()])) {
    const inConsole = c.has(path);
    // Only what the console changed counts; and only when the file does not agree with the console.
    if (inConsole === b.has(path) && sameValue(b.get(path), c.get(path))) continue;
    if (inConsole === f.has(path) && sameValue(c.get(path), f.get(path))) continue;
    out.push({ path, change: !inConsole ? 'back' : f.has(path) ? 'changed' : 'dropped' });
  }
  return out.sort((x, y) => x.path.localeCompare(y.path));
}

/** An edit the file made of its own (not a console change it undid): what returning to the console's version discards. */
export interface FileEdit {
  path: string;
  /** added: the file has it, the console's base did not; removed: the reverse; changed: another value. */
  change: 'added' | 'changed' | 'removed';
}

/** What the file changed of the base the console started from, where the console had not changed it. */
export function fileOwnEdits(base: unknown, consoleRaw: unknown, fileRaw: unknown): FileEdit[] {
  const b = units(base);
  const c = units(consoleRaw);
  const f = units(fileRaw);
  const out: FileEdit[] = [];
  for (const path of new Set([...b.keys(), ...f.keys()])) {
    if (b.has(path) === f.has(path) && sameValue(b.get(path), f.get(path))) continue; // the file left it alone
    if (b.has(path) !== c.has(path) || !sameValue(b.get(path), c.get(path))) continue; // the console's own change
    out.push({ path, change: !b.has(path) ? 'added' : f.has(path) ? 'changed' : 'removed' });
  }
  return out.sort((x, y) => x.path.localeCompare(y.path));
}
