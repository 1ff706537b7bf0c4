/**
 * Where a secret could leak, collected from the running gateway: its whole stdout and stderr, what the REST
 * API shows (health, system, metrics, the config and its versions with the write token, the last log lines,
 * devices, buses) and what a user subscribed to `#` sees over MQTT. Every secret is then searched for in all
 * of it, as is and in the encodings a leak would take (URL-encoded, base64, JSON-escaped).
 */
import http from 'node:http';
import mqtt from 'mqtt';
import type { Gateway, Secrets } from '../bad-input/gateway.js';

function getText(port: number, path: string, token?: string): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve(`HTTP ${res.statusCode}\n${Buffer.concat(chunks).toString()}`));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve(`(no answer: ${e.message})`));
  });
}

/** Every place, name → text. */
export async function collectOutputs(gw: Gateway, s: Secrets): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, path, token] of [
    ['/health/shadow', '/api/v1/health/shadow'], ['/system', '/api/v1/system'], ['/metrics', '/metrics'],
    ['/config (write token)', '/api/v1/config', s.writeToken], ['/config/versions', '/api/v1/config/versions', s.writeToken],
    ['/system/logs', '/api/v1/system/logs?lines=1000', s.writeToken], ['/devices', '/api/v1/devices'], ['/buses', '/api/v1/buses'],
    ['/auth', '/api/v1/auth', s.readToken], ['/shadow/all', '/api/v1/shadow/all'],
  ] as const) {
    out[name] = await getText(gw.http, path, token);
  }
  const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${gw.mqtt}`, { ...s.reader, reconnectPeriod: 0, connectTimeout: 5000 });
  const msgs: string[] = [];
  c.on('message', (topic, payload) => msgs.push(`${topic} ${payload.toString()}`));
  await c.subscribeAsync(['#', '$SYS/#']);
  await new Promise((r) => setTimeout(r, 2500));
  await c.endAsync(true);
  out['MQTT # and $SYS/#'] = msgs.join('\n');
  out['stdout'] = gw.lines.join('\n');
  out['stderr'] = gw.stderr();
  return out;
}

/** Where each secret was found (empty: nowhere). */
export function findSecrets(outputs: Record<string, string>, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [what, secret] of Object.entries(secrets)) {
    const forms = [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64'), JSON.stringify(secret).slice(1, -1)];
    for (const [where, text] of Object.entries(outputs)) {
      if (forms.some((f) => text.includes(f))) found.push(`${what} in ${where}`);
    }
  }
  return found;
}

/** The control: a place must be seen to hold what it should, or an empty output would pass. */
export function outputsLookRight(outputs: Record<string, string>): string[] {
  const want: Record<string, RegExp> = {
    '/config (write token)': /"<secret http\.auth\.tokens\[0\]>"/, '/health/shadow': /"status"/, '/system': /"memory"/,
    '/metrics': /shadowgate_/, '/system/logs': /"msg"/, 'stdout': /"msg":"ready"/, 'MQTT # and $SYS/#': /shadowgate\/thermostat-1 /,
  };
  return Object.entries(want).filter(([k, re]) => !re.test(outputs[k] ?? '')).map(([k]) => `${k} does not look right: ${(outputs[k] ?? '').slice(0, 120)}`);
}
