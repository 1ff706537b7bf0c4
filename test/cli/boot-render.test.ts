/** The text boot-config writes into the system, and the schema rules that keep it well-formed. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { issueText, renderIssue, renderSummary, type BootFacts } from '../../src/cli/boot-banner.js';
import {
  derivePsk, pskValue, renderAuthorizedKeys, renderHostname, renderHosts, renderWlanNetwork, renderWpaSupplicant, ssidValue,
} from '../../src/cli/boot-render.js';
import { problemsOf } from '../config/helpers.js';

const HEADER = '# Written by "shadowgate boot-config" at every boot from the "system" section of shadowgate.json; edit that file instead.';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop';

test('hosts: the 127.0.1.1 line is replaced in place, everything else kept; added or created when missing', () => {
  const existing = '127.0.0.1\tlocalhost\n127.0.1.1\told-name old-name.lan\n::1\tlocalhost ip6-localhost\n# keep me\n';
  assert.is(renderHosts(existing, 'pi-gw'), '127.0.0.1\tlocalhost\n127.0.1.1 pi-gw\n::1\tlocalhost ip6-localhost\n# keep me\n');
  assert.is(renderHosts('127.0.0.1 localhost\n', 'pi-gw'), '127.0.0.1 localhost\n127.0.1.1 pi-gw\n');
  assert.is(renderHosts(null, 'pi-gw'), '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.1.1 pi-gw\n');
  // A line that only starts with the same digits is another address.
  assert.is(renderHosts('127.0.1.10 other\n', 'x'), '127.0.1.10 other\n127.0.1.1 x\n');
  assert.is(renderHostname('pi-gw'), 'pi-gw\n');
});

test('psk: 64 hex digits unquoted, a passphrase quoted, a passphrase with a quote as the key it derives', () => {
  const hex = 'F42C6FC52DF0EBEF9EBB4B90B38A5F902E83FE1B135A70E23AED762E9710A12E';
  assert.is(pskValue(hex, 'IEEE'), hex);
  assert.is(pskValue('correct horse', 'Net'), '"correct horse"');
  assert.is(pskValue('#not a comment', 'Net'), '"#not a comment"');
  // IEEE 802.11i annex H.4 test vector: what wpa_passphrase prints for this pair.
  assert.is(derivePsk('password', 'IEEE'), 'f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e');
  const quoted = pskValue('pass"word', 'Net');
  assert.match(quoted, /^[0-9a-f]{64}$/);
  assert.is(quoted, derivePsk('pass"word', 'Net'));
  assert.is.not(quoted, derivePsk('pass"word', 'Other'), 'the SSID salts the key');
});

test('ssid: quoted, or hex when it holds a quote; control characters are refused', () => {
  assert.is(ssidValue('Café Wi-Fi'), '"Café Wi-Fi"');
  const hex = ssidValue('say "hi"');
  assert.match(hex, /^[0-9a-f]+$/);
  assert.is(Buffer.from(hex, 'hex').toString('utf8'), 'say "hi"');
  assert.throws(() => ssidValue('two\nlines'), /control characters/);
  assert.throws(() => pskValue('pass\nnetwork={', 'x'), /control characters/);
  assert.throws(() => renderAuthorizedKeys([`${KEY}\nssh-rsa AAAA evil`]), /one line/);
});

test('wpa_supplicant and networkd files, exactly', () => {
  assert.is(renderWpaSupplicant({ ssid: 'Home', psk: 'secret pass', country: 'DE', hidden: false }), [
    HEADER,
    'ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev',
    'update_config=0',
    'country=DE',
    '',
    'network={',
    '\tssid="Home"',
    '\tpsk="secret pass"',
    '}',
    '',
  ].join('\n'));
  assert.match(renderWpaSupplicant({ ssid: 'Home', psk: 'secret pass', country: 'GB', hidden: true }), /\tpsk="secret pass"\n\tscan_ssid=1\n}\n$/);
  assert.is(renderWlanNetwork(), `${HEADER}\n[Match]\nName=wlan0\n\n[Network]\nDHCP=yes\nMulticastDNS=yes\n`);
  assert.is(renderAuthorizedKeys([KEY, 'ssh-rsa AAAAB3Nz']), `${HEADER}\n${KEY}\nssh-rsa AAAAB3Nz\n`);
});

test('the schema refuses what would break those files, without echoing secrets', () => {
  const problems = problemsOf({
    system: {
      hostname: '-gw',
      wifi: { ssid: 'two\nlines', psk: 'short', country: 'de' },
      ssh_authorized_keys: ['ssh-dss AAAAB3Nz old', `${KEY}\nssh-rsa AAAA smuggled`],
    },
  });
  const at = (prefix: string): string | undefined => problems.find((p) => p.startsWith(prefix));
  assert.match(at('system.hostname: ') ?? '', /host name/);
  assert.match(at('system.wifi.ssid: ') ?? '', /control characters/);
  assert.match(at('system.wifi.psk: ') ?? '', /8-63 printable ASCII characters or 64 hex digits/);
  assert.match(at('system.wifi.country: ') ?? '', /two-letter country code/);
  assert.ok(at('system.ssh_authorized_keys[0]: '), problems.join('\n'));
  assert.ok(at('system.ssh_authorized_keys[1]: '), problems.join('\n'));
  assert.not.ok(problems.some((p) => p.includes('short')), 'the passphrase is not repeated');
  assert.ok(problemsOf({ system: { wifi: { ssid: 'x', psk: `${'a'.repeat(63)}"${'b'}`, country: 'DE' } } }).some((p) => p.startsWith('system.wifi.psk')), '64 chars that are not hex');
  assert.ok(problemsOf({ system: { wifi: { ssid: 'ä'.repeat(17), psk: '12345678', country: 'DE' } } })
    .includes('system.wifi.ssid: must be at most 32 bytes as UTF-8 (got 34)'));
  assert.ok(problemsOf({ system: { wifi: { ssid: 'x', country: 'DE' } } }).includes('system.wifi.psk: is required'));
  assert.ok(problemsOf({ system: { hostnme: 'x' } }).some((p) => p.includes('did you mean "hostname"')));
});

test('a valid system section loads with its defaults; the rest of the config is unaffected', () => {
  const config = validateConfig({ system: { hostname: 'gw-01', wifi: { ssid: 'Net', psk: 'a'.repeat(64).replace(/a/g, 'f'), country: 'US' } } }, { env: {}, models: {} });
  assert.equal(config.system, { hostname: 'gw-01', wifi: { ssid: 'Net', psk: 'f'.repeat(64), country: 'US', hidden: false }, ssh_authorized_keys: [] });
  assert.equal(validateConfig({}, { env: {}, models: {} }).system, { ssh_authorized_keys: [] });
  assert.equal(validateConfig({ system: { ssh_authorized_keys: [KEY, 'sk-ssh-ed25519@openssh.com AAAAGnNr'] } }, { env: {}, models: {} }).system.ssh_authorized_keys.length, 2);
});

const facts: BootFacts = {
  version: '1.2.3', gatewayId: 'gw\\01', port: 8081, hostname: 'pi-gw', token: 'tok_SECRET_123456', tokenKind: 'generated',
  tokenFile: '/data/config/api-token', message: 'x is invalid (1 problem)', problems: ['shadow.ttl: must be a duration'], statusFile: '/data/config/status.json',
};

test('console banner: agetty\'s \\4 for the address, other backslashes escaped, the token; stdout never has the token', () => {
  assert.is(issueText('a\\nb'), 'a\\\\nb');
  const issue = renderIssue(facts);
  assert.ok(issue.includes('REST API: http://\\4:8081/api/v1\n'), issue);
  assert.ok(issue.includes('http://pi-gw.local:8081/api/v1'), issue);
  assert.ok(issue.includes('gateway "gw\\\\01"'), issue);
  assert.ok(issue.includes('API token: tok_SECRET_123456'), issue);
  assert.ok(issue.includes('/data/config/api-token'), issue);
  assert.ok(issue.includes('  shadow.ttl: must be a duration'), issue);
  const summary = renderSummary(facts).join('\n');
  assert.not.ok(summary.includes('tok_SECRET'), summary);
  assert.ok(summary.includes('REST API: port 8081, http://pi-gw.local:8081/api/v1'), summary);
  assert.ok(summary.includes('Config: x is invalid (1 problem)'), summary);
  const many = renderIssue({ ...facts, problems: Array.from({ length: 8 }, (_, i) => `p${i}: bad`) });
  assert.ok(many.includes('  p4: bad') && !many.includes('p5: bad') && many.includes('... and 3 more in /data/config/status.json'), many);
  const set = renderIssue({ ...facts, token: undefined, tokenKind: 'config' });
  assert.ok(set.includes('API token: set in the config'), set);
});

test.run();
