/**
 * Checks of the `system` section (the SD image's settings) that the schema cannot express. They run in
 * check-config too, so a file that passes there never breaks the Wi-Fi at the next boot.
 */
import { isObj } from './model-checks.js';

// 802.11 limits an SSID to 32 octets; the schema's maxLength counts characters, and "ä" is two octets.
const SSID_MAX_BYTES = 32;

/** `path: message` lines, empty when all is well; skips whatever the schema already refuses. */
export function checkSystem(cfg: Record<string, unknown>): string[] {
  const wifi = isObj(cfg.system) ? cfg.system.wifi : undefined;
  if (!isObj(wifi) || typeof wifi.ssid !== 'string') return [];
  const bytes = Buffer.byteLength(wifi.ssid, 'utf8');
  return bytes > SSID_MAX_BYTES ? [`system.wifi.ssid: must be at most ${SSID_MAX_BYTES} bytes as UTF-8 (got ${bytes})`] : [];
}
