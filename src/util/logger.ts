/** One logger (pino, JSON to stdout; journald keeps it); parts take namespaced children. */
import { pino } from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
}

/** For tests and CLI tools: nothing logged. */
export const silentLogger: Logger = pino({ level: 'silent' });
