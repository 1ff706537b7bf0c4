/**
 * The real gateway (dist/main.js) as a child process whose WHOLE stdout is kept (the auth campaign greps it
 * for secrets; scripts/bench/child.ts drops what follows "ready"), with the ports of its "ready" line, the
 * demo's simulated devices, tokens and MQTT users. Stopped by PID; the temp dir is the caller's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import WebSocket from 'ws';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { hashPassword } from '../../../src/export/auth.js';
import { MAIN, rssOf, stopChild } from '../../bench/child.js';

export interface Secrets {
  writeToken: string;
  readToken: string;
  /** MQTT users: a writer (`can_write`) and a reader. */
  writer: { username: string; password: string };
  reader: { username: string; password: string };
}

/** Random-looking but fixed per run: a secret must be a string no other output could contain by chance. */
export function makeSecrets(tag: string): Secrets {
  const r = (): string => Math.random().toString(36).slice(2, 12);
  return {
    writeToken: `wtok-${tag}-${r()}${r()}`,
    readToken: `rtok-${tag}-${r()}${r()}`,
    writer: { username: 'writer', password: `wpw-${tag}-${r()}` },
    reader: { username: 'reader', password: `rpw-${tag}-${r()}` },
  };
}

/** The demo's models (board/demo.json): a thermostat with a writable setpoint, a meter with a relay. */
export const DEMO_MODELS = {
  'demo-thermostat': { points: [
    { name: 'temperature', type: 'float', unit: '°C', decimals: 2, sim: { fn: 'sine', min: 18, max: 26, period: '60s' } },
    { name: 'setpoint', type: 'float', access: 'RW', unit: '°C', decimals: 1, sim: { fn: 'constant', value: 21.5 } },
    { name: 'status', type: 'string', sim: { fn: 'constant', value: 'ok' } },
  ] },
  'demo-meter': { points: [
    { name: 'pulses', type: 'int', sim: { fn: 'counter', step: 1 } },
    { name: 'relay', type: 'int', access: 'RW', sim: { fn: 'constant', value: 0 } },
    { name: 'status', type: 'string', sim: { fn: 'constant', value: 'ok' } },
  ] },
};

export const DEMO_DEVICES = [
  { id: 'thermostat-1', model: 'demo-thermostat', bus: 'sim', poll: '1s' },
  { id: 'thermostat-2', model: 'demo-thermostat', bus: 'sim', poll: '1s' },
  { id: 'meter-1', model: 'demo-meter', bus: 'sim', poll: '1s' },
];

/** A demo-like config: tokens, users, MQTT on free ports; `extra` is merged over the top-level sections. */
export async function demoConfig(dataDir: string, s: Secrets, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const { mqtt: mqttExtra, gateway: gwExtra, ...rest } = extra as { mqtt?: object; gateway?: object };
  return {
    gateway: { id: 'rel', data_dir: dataDir, log_level: 'info', ...gwExtra },
    http: { host: '127.0.0.1', port: 0, auth: { tokens: [s.writeToken], read_tokens: [s.readToken] } },
    mqtt: {
      host: '127.0.0.1', port: 0, ws_port: 0, base_topic: 'shadowgate', allow_anonymous: true,
      users: [
        { username: s.writer.username, password_hash: await hashPassword(s.writer.password), can_write: true },
        { username: s.reader.username, password_hash: await hashPassword(s.reader.password), can_write: false },
      ],
      ...mqttExtra,
    },
    shadow: { default_ttl: '30s', persist_interval: '5s' },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: DEMO_MODELS,
    devices: DEMO_DEVICES,
    ...rest,
  };
}

/**
 * How the systemd unit runs the gateway: the node flags of its ExecStart and its Environment= settings (the
 * SHADOWGATE_* paths excepted: a test has its own config and data dir). Memory figures are the shipped
 * process's only with them (the heap limit; MALLOC_ARENA_MAX).
 */
export async function unitRuntime(unit = path.resolve('systemd/shadowgate.service')): Promise<{ nodeArgs: string[]; env: Record<string, string> }> {
  const text = await readFile(unit, 'utf8');
  const exec = /^ExecStart=\S*node((?:\s+--\S+)*)\s/m.exec(text)?.[1] ?? '';
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/^Environment=(.+)$/gm)) {
    for (const pair of m[1]!.trim().split(/\s+/)) {
      const [k, ...v] = pair.split('=');
      if (k && !k.startsWith('SHADOWGATE_')) env[k] = v.join('=');
    }
  }
  return { nodeArgs: exec.trim().split(/\s+/).filter(Boolean), env };
}

export interface Gateway {
  child: ChildProcess;
  pid: number;
  http: number;
  mqtt: number;
  mqttWs: number;
  /** Every stdout line so far (JSON log lines). */
  lines: string[];
  stderr(): string;
  alive(): boolean;
  rss(): number;
  /**
   * A full garbage collection through the inspector (startGateway with `inspect`), then the V8 heap's used
   * bytes: what JavaScript objects still hold (RSS adds what the allocators keep).
   */
  gc(): Promise<number>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Node flags instead of the executable's shebang (e.g. the systemd unit's, unitRuntime()). */
  nodeArgs?: string[];
  /**
   * With Node's inspector on a loopback port, so `gc()` can run a full collection before an RSS reading:
   * V8's own idle collection comes 8–20 s after the load stops, at no predictable moment.
   */
  inspect?: boolean;
  env?: Record<string, string>;
  timeoutMs?: number;
}

export async function startGateway(dir: string, config: Record<string, unknown>, opts: StartOptions = {}): Promise<Gateway> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const file = path.join(dir, 'config.json');
  await writeFile(file, JSON.stringify(config, null, 2));
  const env = { ...process.env, ...opts.env };
  // Without flags the executable itself, so its shebang's V8 flags apply as under `shadowgate run`.
  // The shebang's flags (dist/main.js), unless given; the inspector needs the node command line.
  const nodeArgs = [...(opts.nodeArgs ?? (opts.inspect ? ['--max-semi-space-size=1'] : [])), ...(opts.inspect ? ['--inspect=127.0.0.1:0'] : [])];
  const child = nodeArgs.length
    ? spawn(process.execPath, [...nodeArgs, MAIN, 'run', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env })
    : spawn(MAIN, ['run', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const lines: string[] = [];
  let partial = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts.filter((l) => l.length > 0));
  });
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const ready = await new Promise<{ httpPort: number; mqttPort: number; mqttWsPort: number }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway not ready in ${timeoutMs} ms: ${err.slice(-500)}`));
    }, timeoutMs);
    const poll = setInterval(() => {
      const line = lines.find((l) => l.includes('"msg":"ready"'));
      if (!line) return;
      clearTimeout(timer);
      clearInterval(poll);
      resolve(JSON.parse(line) as { httpPort: number; mqttPort: number; mqttWsPort: number });
    }, 20);
    child.once('exit', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(new Error(`gateway exited (${code}) before ready: ${err.slice(-800)}${lines.slice(-5).join('\n')}`));
    });
  });
  const pid = child.pid!;
  const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(err)?.[1];
  return {
    child, pid, http: ready.httpPort, mqtt: ready.mqttPort, mqttWs: ready.mqttWsPort, lines,
    stderr: () => err,
    alive: () => child.exitCode === null && child.signalCode === null,
    rss: () => rssOf(pid),
    gc: () => (inspector ? collectGarbage(inspector) : Promise.reject(new Error('gateway started without inspect'))),
    stop: () => stopChild(child),
  };
}

/** HeapProfiler.collectGarbage, then Runtime.getHeapUsage's usedSize, over the inspector protocol (5 s timeout). */
function collectGarbage(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('inspector: no answer to collectGarbage / getHeapUsage in 5 s'));
    }, 5000);
    ws.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    ws.on('open', () => ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' })));
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { id?: number; result?: { usedSize?: number } };
      if (m.id === 1) ws.send(JSON.stringify({ id: 2, method: 'Runtime.getHeapUsage' }));
      if (m.id !== 2) return;
      clearTimeout(timer);
      ws.close();
      resolve(m.result?.usedSize ?? NaN);
    });
  });
}
