/** One logger (pino, JSON to stdout; journald keeps it); parts take namespaced children. */
import { pino } from 'pino';
import type { LogRing } from './log-ring.js';

export type Logger = pino.Logger;

/**
 * The password of a URL's `user:password@` (an export target, an upstream broker), wherever it shows up in a
 * line — a field, an error message, a stack — becomes `***`: logs go to journald and to the console's
 * System page, neither a place for secrets. JSON escapes (`\"`, `\\`) cannot occur inside the match.
 */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@"\\]*):[^\s/@"\\]+@/gi;
export const scrubLine = (line: string): string => (line.includes('@') ? line.replace(URL_PASSWORD, '$1:***@') : line);

/**
 * A field named `level` in a line's object would follow pino's own in the JSON, and a reader takes the last:
 * a warning logged with `{ level: 1 }` showed as level 1 in the console. Such a field is kept as `field_level`.
 */
function keepLevel(obj: Record<string, unknown>): Record<string, unknown> {
  if (!('level' in obj)) return obj;
  const { level, ...rest } = obj;
  return { ...rest, field_level: level };
}

/** With a ring, every line also lands there (the console's last log lines); the logger's level filters both. */
export function createLogger(level: string, ring?: LogRing): Logger {
  const opts = {
    level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime, hooks: { streamWrite: scrubLine },
    formatters: { log: keepLevel },
  };
  if (!ring) return pino(opts);
  return pino(opts, pino.multistream([{ stream: process.stdout, level: 'trace' }, { stream: ring, level: 'trace' }]));
}

/** For tests and CLI tools: nothing logged. */
export const silentLogger: Logger = pino({ level: 'silent' });
