/** The gateway's version, from package.json: `../../package.json` from src/util/, dist/util/ and the release tree. */
import { readFileSync } from 'node:fs';

export function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    // A missing package.json must not stop a boot: the version is only shown.
    return 'unknown';
  }
}
