/**
 * Two configuration values are the same when they would be the same JSON value: key order does not count
 * (an edited file or the console may write keys in any order), array order does, and a key holding
 * `undefined` counts as absent, as in JSON. Comparing JSON text made a reordered upload restart buses and
 * report sections as needing a restart.
 */
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => sameValue(v, b[i]));
  }
  if (!isObj(a) || !isObj(b)) return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
  const keysA = Object.keys(a).filter((k) => a[k] !== undefined);
  const keysB = Object.keys(b).filter((k) => b[k] !== undefined);
  return keysA.length === keysB.length && keysA.every((k) => Object.hasOwn(b, k) && sameValue(a[k], b[k]));
}
