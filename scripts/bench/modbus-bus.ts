/**
 * Real-bus CPU and memory (issue 16 item 7): the gateway, started as the systemd unit starts it, polling
 * a 4-device, 31-point Modbus RTU bus at 9600 baud every second with MQTT on (one subscriber to all it publishes),
 * history and persistence on (the shipped defaults) and HA discovery on. The bus: socat ptys, the
 * baud-emulating relay, and devices.py serving library device images.
 * Figures over a window after a warm-up: CPU % of a core (/proc utime+stime; main thread, kernel part,
 * event-loop wake-ups), CPU ms per Modbus request, RSS (anon + file), achieved polls/s per device.
 * 1. values fixed (the images as devices.py serves them: nothing changes after the first poll);
 *    reference in the same run, on the same rig: a bare modbus-serial loop (reference-master.mjs, same node
 *    flags) sending the requests the slave saw from the gateway, at the same rate; then the gateway again
 *    under --cpu-prof and --trace-gc: the window's top self-time entries, GC rate;
 * 2. values live (live_devices.py moves every measurement point each second), so the shadow changes,
 *    history records and MQTT publishes on every poll.
 * Knobs: BUS_BENCH_WINDOW_S (60), BUS_BENCH_WARMUP_S (10), BUS_BENCH_PROFILE (`fixed`, `live`, `fixed,live`,
 * `0`), BUS_BENCH_LIVE=0 skips part 2. About 5 minutes with the defaults.
 * Run alone: `node --import tsx scripts/bench/modbus-bus.ts`; `make bench` calls benchModbusBus().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/export/mosquitto.js';
import { busCounters, heapOf, snapshotEntry, startGateway, unitFlags, writeGatewayConfig, type BenchDevice, type GcEvent } from './modbus-bus/gateway.js';
import { measureWindow, type Window } from './modbus-bus/proc.js';
import { readProfile, type Profile } from './modbus-bus/profile.js';
import { BusRig, distinctRequests, killChild, rigUnavailable, sleep, waitFor, type SlaveRequest } from './modbus-bus/rig.js';
import type { Result } from './report.js';

const WINDOW_S = Number(process.env.BUS_BENCH_WINDOW_S ?? 60);
const WARMUP_S = Number(process.env.BUS_BENCH_WARMUP_S ?? 10);
/** which runs to repeat under --cpu-prof: `fixed` (default), `live`, `fixed,live` or `0` */
const PROFILE = (process.env.BUS_BENCH_PROFILE ?? 'fixed').split(',');
const PROFILE_INTERVAL_US = 500;
const LIVE = process.env.BUS_BENCH_LIVE !== '0';
const BAUD = 9600;
const POLL_MS = 1000;
const TARGET = { cpuPct: 1.2, msPerRequest: 1.5, rssMb: 50 };
/** Against the bare loop measured in the same run: CPU per request at most 1.3×, RSS at most 15 MB more. */
const VS_LOOP = { cpuRatio: 1.3, rssOverMb: 15 };

/** Library models with a devices.py image each: 13 + 8 + 6 + 4 = 31 points. */
const DEVICES: BenchDevice[] = [
  { id: 'meter-1', model: 'eastron-sdm120', image: 'sdm120', unit: 1 },
  { id: 'pzem-2', model: 'peacefair-pzem-016', image: 'pzem-016', unit: 2 },
  { id: 'room-3', model: 'xy-md02', image: 'xy-md02', unit: 3 },
  { id: 'room-4', model: 'renke-rs-ws-n01', image: 'rs-ws-n01', unit: 4 },
];
const pointsOf = (model: string): number =>
  (JSON.parse(readFileSync(`board/models/${model}.json`, 'utf8')) as { points: { modbus?: unknown }[] }).points.filter((p) => p.modbus).length;

/** What a window saw on the bus, from the slave's log (the same count for the gateway and the reference). */
interface Phase {
  window: Window;
  /** requests the slave answered in the window */
  requests: number;
  /** requests/s, and polls/s per unit id (requests of that unit over its distinct requests) */
  rate: number;
  pollsPerUnit: Map<number, number>;
  distinct: ReturnType<typeof distinctRequests>;
}

function busPhase(window: Window, log: readonly SlaveRequest[]): Phase {
  const seconds = (window.to - window.from) / 1000;
  const distinct = distinctRequests(log);
  const pollsPerUnit = new Map<number, number>();
  for (const d of DEVICES) {
    const mine = distinct.filter((r) => r.unit === d.unit);
    const seen = mine.reduce((s, r) => s + r.seen, 0);
    pollsPerUnit.set(d.unit, mine.length ? seen / mine.length / seconds : 0);
  }
  return { window, requests: log.length, rate: log.length / seconds, pollsPerUnit, distinct };
}

const msPerRequest = (p: Phase): number => (p.requests ? p.window.cpuMs / p.requests : Infinity);

interface GatewayPhase extends Phase {
  /** the gateway's own counter (/metrics) over the window */
  counted: number;
  mqttMessages: number;
  logLines: string;
  profile: Profile | null;
  gc: string;
  heap: string;
}

/** GC in the window, from --trace-gc: how often, how much young garbage, how long. */
function gcSummary(events: readonly GcEvent[], fromMs: number, toMs: number): string {
  const seconds = (toMs - fromMs) / 1000;
  const inWindow = events.filter((e) => e.atMs >= fromMs && e.atMs < toMs);
  const kinds = new Map<string, { n: number; freed: number; pause: number }>();
  for (const e of inWindow) {
    const k = kinds.get(e.kind) ?? { n: 0, freed: 0, pause: 0 };
    k.n++;
    k.freed += e.freedMb;
    k.pause += e.pauseMs;
    kinds.set(e.kind, k);
  }
  if (kinds.size === 0) return 'no GC in the window';
  return [...kinds].map(([kind, k]) => `${kind} ${f2(k.n / seconds)}/s (${f2(k.freed / seconds)} MB/s freed, ${f1(k.pause)} ms paused in ${seconds.toFixed(0)} s)`).join('; ');
}

/**
 * One gateway run: warm-up, then the window. With `profile`: under --cpu-prof and --trace-gc, the
 * profile read after the process exits (it is written then).
 */
async function gatewayPhase(rig: BusRig, entry: string, profile: boolean): Promise<GatewayPhase> {
  const dir = mkdtempSync(join(tmpdir(), 'sg-busbench-gw-'));
  const profDir = join(dir, 'prof');
  const configFile = join(dir, 'config.json');
  let gw: Awaited<ReturnType<typeof startGateway>> | null = null;
  let sub: ChildProcess | null = null;
  let fd = -1;
  try {
    const [mqttPort, wsPort] = [await freePort(), await freePort()];
    await writeGatewayConfig(configFile, { dataDir: join(dir, 'data'), port: rig.master, baud: BAUD, devices: DEVICES, poll: `${POLL_MS}ms`, mqttPort, wsPort });
    const flags = profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-interval=${PROFILE_INTERVAL_US}`, '--trace-gc'] : [];
    gw = await startGateway(entry, configFile, flags);
    // The subscriber is a process of its own writing one line per message, so it costs the gateway only
    // the publishing, and the bench nothing.
    const subFile = join(dir, 'mqtt.log');
    fd = openSync(subFile, 'w');
    // Everything the gateway publishes: its base topic and HA discovery (`#` itself is refused to anonymous
    // clients by newer builds; nothing else publishes on this broker, so the two are the same messages).
    sub = spawn('stdbuf', ['-oL', 'mosquitto_sub', '-h', '127.0.0.1', '-p', String(mqttPort), '-t', 'shadowgate/#', '-t', 'homeassistant/#', '-F', '%t'], { stdio: ['ignore', fd, 'ignore'] });
    const lines = (): number => readFileSync(subFile, 'utf8').split('\n').length - 1;
    await waitFor('the MQTT subscriber to get retained messages', () => lines() > 0, 10_000);
    await sleep(WARMUP_S * 1000);
    const c0 = await busCounters(gw.port);
    const m0 = lines();
    const window = await measureWindow(gw.pid, WINDOW_S, gw.alive);
    const c1 = await busCounters(gw.port);
    const m1 = lines();
    const h = await heapOf(gw.port).catch(() => null);
    const logLines = [...gw.logLevels].map(([l, n]) => `${n} ${l}`).join(', ');
    const phase = busPhase(window, rig.between(window.from, window.to));
    const fromMs = window.from - gw.spawnedAt;
    const toMs = window.to - gw.spawnedAt;
    await gw.stop(); // the profile is written as the process exits
    let prof: Profile | null = null;
    if (profile) {
      const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error('the profiled gateway wrote no .cpuprofile');
      prof = readProfile(join(profDir, file), fromMs, toMs, entry);
    }
    return { ...phase, counted: c1.bus - c0.bus, mqttMessages: m1 - m0, logLines, profile: prof, gc: profile ? gcSummary(gw.gc, fromMs, toMs) : '',
      heap: h ? `V8 heap ${f1(h.used)} MB used of ${f1(h.total)}` : 'V8 heap not reported' };
  } finally {
    await gw?.stop();
    await killChild(sub);
    if (fd >= 0) closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The reference master on the same rig, sending `requests` every poll. */
async function referencePhase(rig: BusRig, requests: readonly { unit: number; fc: number; address: number; count: number }[]): Promise<Phase & { stats: string }> {
  const list = requests.map(({ unit, fc, address, count }) => ({ unit, fc, address, count }));
  const child = spawn(process.execPath, [...unitFlags(), 'scripts/bench/modbus-bus/reference-master.mjs', rig.master, String(BAUD), String(POLL_MS), JSON.stringify(list)],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-1000)));
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  try {
    await waitFor('reference master READY', () => out.includes('READY') || !alive(), 10_000);
    if (!alive()) throw new Error(`reference master exited: ${err}`);
    await sleep(WARMUP_S * 1000);
    const window = await measureWindow(child.pid!, WINDOW_S, alive);
    const phase = busPhase(window, rig.between(window.from, window.to));
    await killChild(child, 5000);
    return { ...phase, stats: /STATS (.*)/.exec(out)?.[1] ?? '(no stats)' };
  } finally {
    await killChild(child, 5000);
  }
}

const f1 = (n: number): string => n.toFixed(1);
const f2 = (n: number): string => n.toFixed(2);
const polls = (p: Phase): string => DEVICES.map((d) => f2(p.pollsPerUnit.get(d.unit) ?? 0)).join('/');
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** CPU split, wake-ups and memory of a window: the parts the JS profile cannot show. */
function describe(w: Window): string {
  const pct = (ms: number): string => f2((ms / (w.to - w.from)) * 100);
  return `${f2(w.cpuPct)}% of a core (main thread ${pct(w.mainThreadMs)}%, ${pct(w.mainSysMs)}% of it in the kernel; other threads ${pct(w.cpuMs - w.mainThreadMs)}%), ` +
    `${w.wakeupsPerS.toFixed(0)} event-loop wake-ups/s, RSS ${f1(w.rssLastMb)} MB (anon ${f1(w.rssAnonMb)} + file ${f1(w.rssFileMb)}; peak ${f1(w.rssPeakMb)}), load average ${w.load1}`;
}

function printGateway(label: string, p: GatewayPhase, refusals: number): void {
  console.log(`  ${label}: ${describe(p.window)}; ${p.requests} requests (slave) / ${p.counted} (/metrics) in ${WINDOW_S} s = ${f2(p.rate)}/s, ` +
    `${f2(msPerRequest(p))} ms CPU/request, polls/s per device ${polls(p)} (configured ${f2(1000 / POLL_MS)}), ` +
    `${p.heap}, MQTT ${f2(p.mqttMessages / WINDOW_S)} messages/s to the subscriber, log lines since start: ${p.logLines}, slave refusals ${refusals}`);
  if (p.gc) console.log(`    GC (--trace-gc): ${p.gc}`);
  if (p.profile) printProfile(p.profile);
}

function printProfile(p: Profile): void {
  console.log(`    profile of the window: ${p.busy} busy samples of ${p.total} (${f2(p.intervalMs)} ms/sample, main thread only); top self time:`);
  for (const e of p.top) console.log(`      ${f1(e.pct).padStart(5)}%  ${e.fn}  ${e.where}`);
  console.log('    self time by module/package:');
  for (const m of p.modules) console.log(`      ${f1(m.pct).padStart(5)}%  ${m.module}`);
  console.log('    on the stack (inclusive) by module/package:');
  for (const m of p.onStack) console.log(`      ${f1(m.pct).padStart(5)}%  ${m.module}`);
  console.log("    on the stack (inclusive), the gateway's own functions:");
  for (const e of p.ownPaths) console.log(`      ${f1(e.pct).padStart(5)}%  ${e.fn}  ${e.where}`);
}

const PROFILED = 'gateway under --cpu-prof --trace-gc (figures include the profiler)';

/** Part 1, values fixed: the gateway, the reference, the profile; the issue's three figures. */
async function fixedValues(entry: string, spec: string, cfg: string): Promise<{ results: Result[]; referenceNote: string }> {
  const rig = new BusRig(spec, BAUD);
  try {
    await rig.start();
    console.log('  values fixed (devices.py images: no change after the first poll)');
    const gw = await gatewayPhase(rig, entry, false);
    printGateway('gateway', gw, rig.refusals);
    console.log(`    requests per poll: ${gw.distinct.map((r) => `u${r.unit} fc${r.fc} ${r.address}+${r.count}`).join(', ')}`);
    const ref = await referencePhase(rig, gw.distinct);
    console.log(`  reference (bare modbus-serial loop, same requests every ${POLL_MS} ms): ${describe(ref.window)}; ` +
      `${ref.requests} requests = ${f2(ref.rate)}/s, ${f2(msPerRequest(ref))} ms CPU/request, polls/s per device ${polls(ref)}, ${ref.stats}`);
    if (PROFILE.includes('fixed')) printGateway(PROFILED, await gatewayPhase(rig, entry, true), rig.refusals);
    const referenceNote = `reference bare modbus-serial loop ${f2(ref.window.cpuPct)}% (${f2(msPerRequest(ref))} ms/request, ${f2(ref.rate)} requests/s, RSS ${f1(ref.window.rssPeakMb)} MB)`;
    const wake = `${gw.window.wakeupsPerS.toFixed(0)} wake-ups/s vs reference ${ref.window.wakeupsPerS.toFixed(0)}`;
    const results: Result[] = [
      {
        name: 'Real bus CPU, gateway', measured: gw.window.cpuPct, target: TARGET.cpuPct, unit: '% core', higherIsBetter: false,
        note: `${f2(msPerRequest(gw))} ms/request, ${f2(gw.rate)} requests/s, polls/s ${polls(gw)} of ${f2(1000 / POLL_MS)}, ${wake}; ${referenceNote}; ${cfg}, values fixed`,
      },
      {
        name: 'Real bus CPU per request', measured: msPerRequest(gw), target: TARGET.msPerRequest, unit: 'ms', higherIsBetter: false,
        note: `reference ${f2(msPerRequest(ref))} ms/request; ${gw.requests} gateway requests in ${WINDOW_S} s; ${cfg}, values fixed`,
      },
      {
        name: 'Real bus RSS', measured: gw.window.rssPeakMb, target: TARGET.rssMb, unit: 'MB', higherIsBetter: false,
        note: `peak of 1 s samples; last ${f1(gw.window.rssLastMb)} MB = anon ${f1(gw.window.rssAnonMb)} + file-backed ${f1(gw.window.rssFileMb)}; ` +
          `reference ${f1(ref.window.rssPeakMb)} MB (anon ${f1(ref.window.rssAnonMb)}); ${cfg}, values fixed`,
      },
      {
        name: 'Real bus CPU per request vs the bare loop', measured: msPerRequest(gw) / msPerRequest(ref), target: VS_LOOP.cpuRatio, unit: '×', higherIsBetter: false,
        note: `${f2(msPerRequest(gw))} vs ${f2(msPerRequest(ref))} ms/request, same rig, same run; ${cfg}, values fixed`,
      },
      {
        name: 'Real bus RSS over the bare loop', measured: gw.window.rssPeakMb - ref.window.rssPeakMb, target: VS_LOOP.rssOverMb, unit: 'MB', higherIsBetter: false,
        note: `peaks ${f1(gw.window.rssPeakMb)} vs ${f1(ref.window.rssPeakMb)} MB (anon ${f1(gw.window.rssAnonMb)} vs ${f1(ref.window.rssAnonMb)}), same run; ${cfg}, values fixed`,
      },
    ];
    return { results, referenceNote };
  } finally {
    await rig.stop();
  }
}

/** Part 2, values live: every measurement point moves each second, so every poll changes the shadow, records history and publishes. */
async function liveValues(entry: string, spec: string, cfg: string, referenceNote: string): Promise<Result[]> {
  const rig = new BusRig(spec, BAUD, 1);
  try {
    await rig.start();
    const changing = `values live (${rig.live?.points ?? '?'} measurement points re-drawn within ±1% every ${rig.live?.period ?? '?'} s)`;
    console.log(`  ${changing}`);
    const lv = await gatewayPhase(rig, entry, false);
    printGateway('gateway', lv, rig.refusals);
    if (PROFILE.includes('live')) printGateway(PROFILED, await gatewayPhase(rig, entry, true), rig.refusals);
    const lcfg = `${cfg}, ${changing}, MQTT ${f2(lv.mqttMessages / WINDOW_S)} messages/s`;
    return [
      {
        name: 'Real bus CPU, gateway, live values', measured: lv.window.cpuPct, target: TARGET.cpuPct, unit: '% core', higherIsBetter: false,
        note: `${f2(msPerRequest(lv))} ms/request, ${f2(lv.rate)} requests/s, polls/s ${polls(lv)}, RSS ${f1(lv.window.rssPeakMb)} MB; ${referenceNote}; ${lcfg}`,
      },
      {
        name: 'Real bus CPU per request, live values', measured: msPerRequest(lv), target: TARGET.msPerRequest, unit: 'ms', higherIsBetter: false,
        note: `${referenceNote}; ${lcfg}`,
      },
    ];
  } finally {
    await rig.stop();
  }
}

export async function benchModbusBus(): Promise<Result[]> {
  const missing = rigUnavailable();
  if (missing) {
    console.log(`SKIP: real-bus CPU bench (${missing})`);
    return [];
  }
  const dir = mkdtempSync(join(tmpdir(), 'sg-busbench-'));
  try {
    const entry = snapshotEntry(dir);
    const points = sum(DEVICES.map((d) => pointsOf(d.model)));
    const devices = DEVICES.map((d) => `${d.model} (${pointsOf(d.model)})`).join(', ');
    console.log(`real-bus CPU bench: ${DEVICES.length} devices, ${points} points: ${devices}; Modbus RTU ${BAUD} baud through the baud relay, ` +
      `poll ${POLL_MS} ms; MQTT on + 1 subscriber to shadowgate/# and homeassistant/#, HA discovery on, history on, persist every 10 s, log info; ` +
      `${entry.label}, node ${unitFlags().join(' ')}; window ${WINDOW_S} s after ${WARMUP_S} s warm-up`);
    const cfg = `${DEVICES.length} dev/${points} pts @${BAUD}, poll ${POLL_MS} ms, MQTT+HA+history+persist on`;
    const spec = DEVICES.map((d) => `${d.image}:${d.unit}`).join(',');
    const { results, referenceNote } = await fixedValues(entry.file, spec, cfg);
    if (LIVE) results.push(...await liveValues(entry.file, spec, cfg, referenceNote));
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report(await benchModbusBus());
}
