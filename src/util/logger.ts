/** One logger (pino, JSON to stdout; journald keeps it); parts take namespaced children. */
import { pino } from 'pino';
import type { LogRing } from './log-ring.js';

export type Logger = pino.Logger;

/** With a ring, every line also lands there (the console's last log lines); the logger's level filters both. */
export function createLogger(level: string, ring?: LogRing): Logger {
  const opts = { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime };
  if (!ring) return pino(opts);
  return pino(opts, pino.multistream([{ stream: process.stdout, level: 'trace' }, { stream: ring, level: 'trace' }]));
}

/** For tests and CLI tools: nothing logged. */
export const silentLogger: Logger = pino({ level: 'silent' });
