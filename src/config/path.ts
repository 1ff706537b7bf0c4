/** Problem paths as users read them: `devices[2].model`, `buses[0].baud_rate`, `(root)`. */

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** Appends one key or index to a readable path. */
export function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  const part = PLAIN_KEY.test(key) ? key : JSON.stringify(key);
  if (!PLAIN_KEY.test(key)) return `${base}[${part}]`;
  return base ? `${base}.${part}` : part;
}

/** A JSON pointer (ajv's instancePath) as a readable path, optionally with one more key; empty → `(root)`. */
export function formatPath(pointer: string, extra?: string): string {
  let out = '';
  const parts = pointer === '' ? [] : pointer.slice(1).split('/');
  for (const raw of parts) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out = joinPath(out, /^\d+$/.test(key) ? Number(key) : key);
  }
  if (extra !== undefined) out = joinPath(out, extra);
  return out === '' ? '(root)' : out;
}
