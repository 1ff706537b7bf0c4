/**
 * Fire-and-forget with a net: a promise nobody awaits (a broker publish whose result does not matter) is
 * still caught, and its failure logged once. An unhandled rejection would end the gateway (main.ts treats
 * one as fatal and exits for systemd to restart it).
 */
import type { Logger } from './logger.js';

export function settle(promise: Promise<unknown>, log: Logger, what: string): void {
  promise.catch((err: unknown) => log.warn({ err }, `${what} failed`));
}
