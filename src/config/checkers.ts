/**
 * Type of a driver's own config checks (e.g. the gpio driver's `checkGpioConfig`: pin names, pins used
 * twice). They run after the schema passed, on the typed config with every model merged into `models`, and
 * their problems are reported with all others. The caller passes them in (main.ts: the gpio checker); no
 * global registry, so importing a module never changes how configs validate. Devices may still name an unknown bus or model (that problem
 * is already reported): a checker skips what it cannot resolve, e.g. with
 * `resolveDevices(config, { skipUnresolved: true })`.
 */
import type { GatewayConfig } from './types.js';

/** Returns `path: message` lines, empty when all is well. Must not throw (a throw becomes one problem). */
export type ConfigChecker = (config: GatewayConfig) => string[];
