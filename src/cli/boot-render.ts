/**
 * The text of the system files `boot-config` writes from the config's `system` section: host name, the
 * 127.0.1.1 line of /etc/hosts, wpa_supplicant and systemd-networkd for wlan0, root's SSH keys.
 * Pure: no fs, so every quoting rule is tested on strings.
 */
import { pbkdf2Sync } from 'node:crypto';
import type { WifiConfig } from '../config/types.js';

/** Written at the top of generated files: an edit there is lost at the next boot (the root is in RAM). */
const HEADER = '# Written by "shadowgate boot-config" at every boot from the "system" section of shadowgate.json; edit that file instead.';

// Control characters would end a line of these line-based formats early; the schema already refuses them.
const CONTROL = /[\u0000-\u001f\u007f]/;

function refuseControl(what: string, text: string): void {
  if (CONTROL.test(text)) throw new Error(`${what} must not contain control characters`);
}

export function renderHostname(name: string): string {
  refuseControl('hostname', name);
  return `${name}\n`;
}

// Debian's convention: the host's own name resolves through 127.0.1.1 (so sudo, mDNS and `hostname -f` work).
const SELF_LINE = /^\s*127\.0\.1\.1(\s|$)/;
const DEFAULT_HOSTS = ['127.0.0.1 localhost', '::1 localhost ip6-localhost ip6-loopback'];

/** `existing` with its 127.0.1.1 line(s) replaced by one for `name` (added when missing); null = no file yet. */
export function renderHosts(existing: string | null, name: string): string {
  refuseControl('hostname', name);
  const lines = existing === null ? [...DEFAULT_HOSTS] : existing.replace(/\n$/, '').split('\n');
  const self = `127.0.1.1 ${name}`;
  const at = lines.findIndex((line) => SELF_LINE.test(line));
  const kept = lines.filter((line) => !SELF_LINE.test(line));
  kept.splice(at === -1 ? kept.length : at, 0, self);
  return `${kept.join('\n')}\n`;
}

/** The 256-bit key wpa_supplicant derives from a passphrase (IEEE 802.11i: PBKDF2-SHA1, SSID as salt, 4096 rounds). */
export function derivePsk(passphrase: string, ssid: string): string {
  return pbkdf2Sync(Buffer.from(passphrase, 'utf8'), Buffer.from(ssid, 'utf8'), 4096, 32, 'sha1').toString('hex');
}

const HEX_KEY = /^[0-9A-Fa-f]{64}$/;

/**
 * `ssid=` value. wpa_supplicant has no escapes inside "…" (it takes everything up to the line's last quote),
 * so a name with a quote is written as hex, which it also accepts and which is exact for any bytes.
 */
export function ssidValue(ssid: string): string {
  refuseControl('ssid', ssid);
  return ssid.includes('"') ? Buffer.from(ssid, 'utf8').toString('hex') : `"${ssid}"`;
}

/**
 * `psk=` value: 64 hex digits are the key itself and go unquoted; a passphrase goes in quotes. A passphrase
 * with a quote in it is written as the key it derives, which needs no quoting at all.
 */
export function pskValue(psk: string, ssid: string): string {
  refuseControl('psk', psk);
  if (HEX_KEY.test(psk)) return psk;
  return psk.includes('"') ? derivePsk(psk, ssid) : `"${psk}"`;
}

/** /etc/wpa_supplicant/wpa_supplicant-wlan0.conf, read by wpa_supplicant@wlan0.service. */
export function renderWpaSupplicant(wifi: WifiConfig): string {
  if (!/^[A-Z]{2}$/.test(wifi.country)) throw new Error('country must be two capital letters');
  return [
    HEADER,
    // GROUP=netdev: Debian's group for tools that may talk to the daemon (wpa_cli) without root.
    'ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev',
    // The file is regenerated every boot; wpa_supplicant writing to it would be lost anyway.
    'update_config=0',
    `country=${wifi.country}`,
    '',
    'network={',
    `\tssid=${ssidValue(wifi.ssid)}`,
    `\tpsk=${pskValue(wifi.psk, wifi.ssid)}`,
    // A hidden network answers only probes that carry its name.
    ...(wifi.hidden ? ['\tscan_ssid=1'] : []),
    '}',
    '',
  ].join('\n');
}

/** /run/systemd/network/25-wlan0.network: DHCP on wlan0, and mDNS so <hostname>.local resolves. */
export function renderWlanNetwork(): string {
  return [HEADER, '[Match]', 'Name=wlan0', '', '[Network]', 'DHCP=yes', 'MulticastDNS=yes', ''].join('\n');
}

/** root's authorized_keys: one key per line (a line break inside a key would smuggle in another key). */
export function renderAuthorizedKeys(keys: readonly string[]): string {
  for (const key of keys) if (/[\r\n]/.test(key)) throw new Error('an SSH key must be one line');
  return [HEADER, ...keys, ''].join('\n');
}
