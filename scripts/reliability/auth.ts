/**
 * Auth against the real gateway (issue 15 item 5): every write route of the running app's own route table
 * refused without the right token; reads change nothing; the WebSocket stream takes no commands; MQTT `set`
 * and the gateway's own topics closed to those without the right, subscriptions of anonymous clients kept to
 * the gateway's topics; no secret (tokens, passwords, hashes, the bridge's and the export's passwords, the
 * Wi-Fi passphrase) in the log, the API or on MQTT; guessing slowed per source; systemd-analyze security ≤ 2.5.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Aedes } from 'aedes';
import WebSocket from 'ws';
import { run, which } from '../../test/deploy/run.js';
import { versionCount, writeMarks } from './bad-input/checks.js';
import { demoConfig, makeSecrets, startGateway, type Gateway, type Secrets } from './bad-input/gateway.js';
import { burstHeld, mqttBrute, restBrute, rising, type BruteResult } from './auth/brute.js';
import { checkLogin, checkOwnTopics, checkSet, checkSubscribe, type AclResult } from './auth/mqtt-acl.js';
import { checkRoute, isWriteRoute, routeTable } from './auth/routes.js';
import { collectOutputs, findSecrets, outputsLookRight } from './auth/secrets.js';
import type { Campaign, Row } from './table.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An upstream broker for the bridge that only lets the bridge's password in: the password is really used. */
async function upstream(user: string, password: string): Promise<{ port: number; logins: () => number; close: () => Promise<void> }> {
  let logins = 0;
  const broker = await Aedes.createBroker({
    authenticate: (_c, u, p, done) => {
      const ok = u === user && p?.toString() === password;
      if (ok) logins++;
      done(null, ok);
    },
  });
  const server = net.createServer((socket) => broker.handle(socket));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    logins: () => logins,
    close: async () => {
      await new Promise<void>((r) => broker.close(() => r()));
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const aclRow = (test: string, r: AclResult, goal: string): Row => ({
  test, trials: r.trials, survived: r.passed, lost: `${r.trials - r.passed} let through`, figure: `${r.passed}/${r.trials} as the ACL says`,
  goal, ok: r.trials > 0 && r.passed === r.trials, ...(r.problems.length ? { note: r.problems.join('; ') } : {}),
});

const bruteRow = (proto: string, b: BruteResult): Row => {
  const t = b.times.map((x) => (x / 1000).toFixed(2)).join(' → ');
  const ok = rising(b.times) && burstHeld(b.burst) && b.accepted && b.afterReset < 1000 && b.problems.length === 0;
  return {
    test: `${proto}: ${b.times.length} wrong credentials from one address, in turn`, trials: b.times.length, survived: b.times.length, lost: '-',
    figure: `s per attempt ${t}; parallel burst: ${b.burst.filter((x) => x === 'blocked').length}/${b.burst.length} refused unjudged; after the block the right one ${b.accepted ? 'accepted' : 'REFUSED'}, then a wrong one ${(b.afterReset / 1000).toFixed(2)} s`,
    goal: 'attempt n takes ≥ 0.1 s × 2^(n-1) (doubling), parallel guesses unjudged, reset on success', ok,
    ...(b.problems.length || !ok ? { note: [...b.problems, `burst ${b.burst.join(',')}`].join('; ') } : {}),
  };
};

/** The unit's sandbox score, as test/deploy/systemd.test.ts reads it. */
async function systemdRow(): Promise<Row> {
  const analyze = await which('systemd-analyze');
  const goal = 'exposure ≤ 2.5';
  if (!analyze) return { test: 'systemd-analyze security', trials: 0, survived: 0, lost: '-', figure: 'not measured', goal, ok: false, note: 'systemd-analyze missing (Debian package systemd)' };
  const r = await run(analyze, ['security', '--offline=true', '--no-pager', path.resolve('systemd/shadowgate.service')]);
  const score = Number((/Overall exposure level for shadowgate\.service: ([\d.]+)/.exec(r.stdout) ?? [])[1]);
  return {
    test: 'systemd-analyze security --offline (systemd/shadowgate.service)', trials: 1, survived: score <= 2.5 ? 1 : 0, lost: '-',
    figure: `exposure ${score}`, goal, ok: score > 0 && score <= 2.5, ...(Number.isFinite(score) ? {} : { note: r.stderr.slice(0, 300) }),
  };
}

/** The event stream: a client without a token sends command-like frames; nothing may be written. */
async function wsCommands(gw: Gateway): Promise<{ sent: number; written: boolean; upgraded: boolean }> {
  const before = await writeMarks(gw.http);
  const ws = new WebSocket(`ws://127.0.0.1:${gw.http}/api/v1/ws`);
  const upgraded = await new Promise<boolean>((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('error', () => resolve(false));
    setTimeout(() => resolve(false), 5000);
  });
  const cmds = [
    { type: 'write', id: 'meter-1', values: [{ name: 'relay', value: 1 }] }, { id: 'meter-1', point: 'relay', value: 1 },
    { method: 'POST', path: '/api/v1/device/writePoint', body: { id: 'meter-1', point: 'relay', value: 1 } }, { setpoint: 5 },
  ];
  if (upgraded) for (const c of cmds) ws.send(JSON.stringify(c));
  await sleep(1500);
  ws.terminate();
  return { sent: upgraded ? cmds.length : 0, written: before !== await writeMarks(gw.http), upgraded };
}

async function checks(gw: Gateway, s: Secrets, reduced: boolean, log: (l: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  // REST: the running app's route table.
  const table = routeTable(gw.lines);
  const writes = table.filter(isWriteRoute);
  const misdeclared = table.filter((r) => r.access === 'read' && !['GET', 'HEAD'].includes(r.method));
  const marks = await writeMarks(gw.http);
  const versions = await versionCount(gw.http, s);
  const results = [];
  for (const [i, r] of writes.entries()) results.push(await checkRoute(gw, s, r, `127.0.1.${i + 1}`));
  const changed = marks !== await writeMarks(gw.http) || versions !== await versionCount(gw.http, s);
  const failed = results.filter((r) => r.problems.length > 0);
  log(`REST: ${table.length} routes, ${writes.length} write routes`);
  rows.push({
    test: 'REST: every write route of the route table, 4 ways', trials: writes.length * 4, survived: writes.length * 4 - failed.reduce((n, r) => n + r.problems.length, 0),
    lost: changed ? 'a probe changed something' : '0 changes', figure: `${writes.length - failed.length}/${writes.length} routes: none/wrong/read token → 401 envelope, write token passes`,
    goal: 'every write route refused without the right token', ok: failed.length === 0 && misdeclared.length === 0 && !changed && writes.length >= 15,
    note: [`${table.length} routes in the table; write routes: ${writes.map((r) => `${r.method} ${r.path.replace('/api/v1', '')}`).join(', ')}`,
      ...misdeclared.map((r) => `${r.method} ${r.path} registered as a read`), ...failed.map((f) => `${f.route}: ${f.problems.join(', ')}`)].join('; '),
  });
  // Reads without a token change nothing.
  const reads = table.filter((r) => !isWriteRoute(r) && r.method === 'GET');
  const before = await writeMarks(gw.http);
  const v0 = await versionCount(gw.http, s);
  const readStatus = await Promise.all(reads.map(async (r) => (await fetch(`http://127.0.0.1:${gw.http}${r.path}`, { signal: AbortSignal.timeout(10_000) })).status));
  const readChanged = before !== await writeMarks(gw.http) || v0 !== await versionCount(gw.http, s);
  rows.push({
    test: 'REST: every read route without a token', trials: reads.length, survived: readChanged ? 0 : reads.length, lost: readChanged ? 'state changed' : '0 changes',
    figure: `${reads.length} GET routes answered (${[...new Set(readStatus)].join(', ')}), shadow writes and config versions unchanged`,
    goal: 'reads change nothing', ok: !readChanged && reads.length > 5,
  });
  const w = await wsCommands(gw);
  rows.push({
    test: 'WebSocket /api/v1/ws: command-like frames without a token', trials: w.sent, survived: w.written ? 0 : w.sent, lost: w.written ? 'written' : '0 writes',
    figure: `${w.sent} frames sent after the upgrade, nothing written`, goal: 'the stream takes no commands', ok: w.upgraded && !w.written,
  });
  // MQTT.
  rows.push(aclRow('MQTT: set by anonymous and a read-only user (TCP, WebSocket) + writer control', await checkSet(gw, s), 'refused, nothing written; the writer writes'));
  rows.push(aclRow('MQTT: publishing the gateway\'s own topics (state, availability, events, results, bridge)', await checkOwnTopics(gw, s), 'refused for everyone, retained state intact'));
  rows.push(aclRow('MQTT: subscriptions (anonymous outside the gateway\'s topics; a user\'s # as control)', await checkSubscribe(gw, s), 'anonymous refused elsewhere, users not'));
  rows.push(aclRow('MQTT: wrong password / right password', await checkLogin(gw, s), 'CONNACK 4 / connected'));
  // Guessing, REST and MQTT at once (separate tables, separate loopback addresses).
  const n = reduced ? 5 : 8;
  const [rb, mb] = await Promise.all([restBrute(gw, s, n, '127.0.0.5'), mqttBrute(gw, s, n, '127.0.0.6')]);
  rows.push(bruteRow('REST', rb), bruteRow('MQTT', mb));
  return rows;
}

export const auth: Campaign = async ({ reduced, log }) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-auth-'));
  const s = makeSecrets('auth');
  const r = (): string => Math.random().toString(36).slice(2, 12);
  const extra = { bridge: `brpw-${r()}${r()}`, export: `expw-${r()}${r()}`, psk: `wifi-${r()}${r()}` };
  const up = await upstream('gw-bridge', extra.bridge);
  let gw: Gateway | undefined;
  try {
    const config = await demoConfig(dir, s, {
      gateway: { log_level: 'debug' },
      mqtt: { bridge: { url: `mqtt://127.0.0.1:${up.port}`, username: 'gw-bridge', password: extra.bridge, topic_prefix: 'site-rel' } },
      export: { shadow: { enable: true, interval: '1s', targets: ['http'], http: { url: `http://exporter:${extra.export}@127.0.0.1:9/ingest`, timeout: '1s' } } },
      system: { wifi: { ssid: 'rel-net', psk: extra.psk, country: 'DE' } },
    });
    const hashes = (config['mqtt'] as { users: { password_hash: string }[] }).users.map((u) => u.password_hash);
    gw = await startGateway(dir, config);
    log(`gateway pid ${gw.pid}, http ${gw.http}, mqtt ${gw.mqtt}; upstream ${up.port}`);
    for (let i = 0; i < 50 && up.logins() === 0; i++) await sleep(100);
    const rows = await checks(gw, s, reduced, log);
    const outputs = await collectOutputs(gw, s);
    await gw.stop();
    outputs['stdout'] = gw.lines.join('\n');
    outputs['stderr'] = gw.stderr();
    const secrets: Record<string, string> = {
      'write token': s.writeToken, 'read token': s.readToken, 'writer password': s.writer.password, 'reader password': s.reader.password,
      'bridge password': extra.bridge, 'export URL password': extra.export, 'Wi-Fi passphrase': extra.psk,
      ...Object.fromEntries(hashes.map((h, i) => [`password hash ${i + 1}`, h])),
    };
    const found = findSecrets(outputs, secrets);
    const wrong = outputsLookRight(outputs);
    const places = Object.keys(outputs).length;
    rows.push({
      test: 'secrets in logs, REST answers (incl. /config with the write token) and MQTT', trials: Object.keys(secrets).length * places,
      survived: Object.keys(secrets).length * places - found.length, lost: `${found.length} leaks`,
      figure: `${Object.keys(secrets).length} secrets × ${places} places (${gw.lines.length} log lines), ${found.length} found; the bridge logged in upstream ${up.logins()}×`,
      goal: 'no secret anywhere', ok: found.length === 0 && wrong.length === 0 && up.logins() > 0,
      ...(found.length || wrong.length ? { note: [...found, ...wrong].join('; ') } : {}),
    });
    rows.push(await systemdRow());
    return rows;
  } finally {
    await gw?.stop();
    await up.close();
    await rm(dir, { recursive: true, force: true });
  }
};
