/** The gateway's version, from package.json: `../../package.json` from src/util/, dist/util/ and the release tree. */
import { readFileSync } from 'node:fs';

let version: string | undefined;

/** Read once (at start-up: gateway.ts, the boot-config CLI); later calls read no file on the event loop. */
export function readVersion(): string {
  return (version ??= readPackageVersion());
}

function readPackageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    // A missing package.json must not stop a boot: the version is only shown.
    return 'unknown';
  }
}
