/**
 * Issue 16's footprint figures, measured on the release bundle with the unit's node flags and the shipped
 * defaults on (scripts/bench/fleet-f.ts), all in one run:
 *   1. memory: fleet F's RSS, per point over a 1 × 100 gateway with the same features, flatness, unit headroom;
 *   2. flash writes: /proc/<pid>/io write_bytes scaled to a day for an idle gateway, and for F over the samples'
 *      own bytes (12 a sample), with the history's share (its own counter) and the rest's;
 *   3. event-loop delay (the gateway's own event-loop monitor, /metrics) while F runs and saves snapshots;
 *   4. REST devicePoint with F running vs a bare node:http server sending the same bytes (autocannon);
 *   6. start-to-ready with F restored from disk.
 * `BENCH_WINDOW_S` sets the measuring window (default 60 s; the 10 minutes: 600).
 * Run alone: `node --import tsx scripts/bench/footprint.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { BUNDLE, dirBytes, entryOf, MAIN, rssOf, startChild, stopChild, UNIT_FLAGS, type Running } from './child.js';
import { describeFleet, FLEET_1, FLEET_F, POINTS_PER_DEVICE, writeFleet, type FleetOptions } from './fleet-f.js';
import { freePort } from '../../test/drivers/modbus-rig.js';
import { report, type Result } from './report.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 60);
const MB = 2 ** 20;
const DAY_S = 86_400;
const entry = existsSync(BUNDLE) ? entryOf(BUNDLE) : entryOf(MAIN);
const entryText = entry.file === BUNDLE ? `release bundle, the unit's flags ${UNIT_FLAGS.join(' ')}` : 'dist/main.js (no bundle: run make dist)';

function unitMemoryMax(): number {
  const m = /^MemoryMax=(\d+)M/m.exec(readFileSync('systemd/shadowgate.service', 'utf8'));
  return m ? Number(m[1]) * MB : NaN;
}

const writeBytes = (pid: number): number => Number(/^write_bytes:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? NaN);


/** One scrape of /metrics: a render of every device's series on the gateway's loop, so the window takes one per look. */
async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
}

const valueOf = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

async function metric(port: number, name: string): Promise<number> {
  return valueOf(await scrape(port), name);
}

interface Started { gw: Running; sub: ChildProcess | null; dataDir: string; config: string }

async function start(dir: string, name: string, o: FleetOptions): Promise<Started> {
  const ports = { http: await freePort(), mqtt: await freePort(), ws: await freePort() };
  const config = path.join(dir, `${name}.json`);
  const dataDir = path.join(dir, `${name}-data`);
  await writeFleet(config, dataDir, ports, o);
  const gw = await startChild(config, 60_000, entry);
  // One subscriber to all the gateway publishes, as Node-RED would be (anonymous clients may not subscribe to
  // `#` itself: other clients' topics are not theirs).
  const sub = o.mqtt ? spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(ports.mqtt), '-t', 'shadowgate/#', '-t', 'homeassistant/#', '-q', '0'], { stdio: 'ignore' }) : null;
  return { gw, sub, dataDir, config };
}

async function stop(s: Started): Promise<void> {
  if (s.sub) await stopChild(s.sub);
  await s.gw.stop();
}

/** Waits (at most `maxMs`, polling every second) until the seal count passes `from`; returns the new count. */
async function sealAfter(port: number, from: number, maxMs: number): Promise<number> {
  for (let waited = 0; waited < maxMs; waited += 1000) {
    const now = await metric(port, 'shadowgate_history_compactions_total');
    if (now > from) return now;
    await settle(1000);
  }
  return metric(port, 'shadowgate_history_compactions_total');
}

async function rest(port: number, seconds: number): Promise<{ rps: number; p99: number; errors: number }> {
  const url = `http://127.0.0.1:${port}/api/v1/shadow/devicePoint?id=dev-7&point=f0`;
  const r = await autocannon({ url, connections: 50, duration: seconds, pipelining: 1 });
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

export async function bareServer(body: string): Promise<{ port: number; child: ChildProcess }> {
  const src = `const http=require('http');const b=Buffer.from(${JSON.stringify(body)});` +
    `const s=http.createServer((q,r)=>{r.writeHead(200,{'content-type':'application/json','content-length':b.length});r.end(b)});` +
    `s.listen(0,'127.0.0.1',()=>console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', () => reject(new Error('baseline server died')));
  });
  return { port, child };
}

/** The idle gateway: the demo's three devices with constant values, everything else as shipped. */
async function idleWrites(dir: string): Promise<Result> {
  const idle = await start(dir, 'idle', { devices: 3, changing: 0, mqtt: true, history: true, homeassistant: true });
  try {
    await settle(15_000); // start-up writes (config version, first snapshot, registry) are not the idle rate
    const w0 = writeBytes(idle.gw.child.pid!);
    await settle(WINDOW_S * 1000);
    const perDay = ((writeBytes(idle.gw.child.pid!) - w0) / WINDOW_S) * DAY_S;
    return { name: 'flash writes, idle gateway', measured: perDay / MB, target: 5, unit: 'MB/day', higherIsBetter: false,
      note: `3 devices × 100 constant points, features as F; /proc/pid/io write_bytes over ${WINDOW_S} s × ${DAY_S / WINDOW_S}` };
  } finally {
    await stop(idle);
  }
}

export async function benchFootprint(): Promise<Result[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-footprint-'));
  const results: Result[] = [];
  const config = `${describeFleet(FLEET_F)}; ${entryText}`;
  console.log(`footprint: ${config}; window ${WINDOW_S} s`);
  try {
    const one = await start(dir, 'one', FLEET_1);
    await settle(20_000);
    const rssOne = rssOf(one.gw.child.pid!);
    await stop(one);

    const f = await start(dir, 'fleet', FLEET_F);
    try {
      const pid = f.gw.child.pid!;
      // Warm-up: every device polled, discovery sent, the first generation and the first history seal written.
      // The first log after a start holds a block for each of the 100,000 points' first values: its seal (a
      // directory entry per point) is a one-off of the start, not part of the daily rate, so the window waits
      // for it (bounded: a slow machine may take longer to fill that log).
      await settle(60_000);
      for (let waited = 0; waited < 120_000 && !((await metric(f.gw.port, 'shadowgate_history_compactions_total')) >= 1); waited += 2000) await settle(2000);
      // The window starts and ends just after a seal: a seal writes its log's directory (~2 MB for F) once every
      // ~80 s, so a window cut anywhere holds 0 or 1 of them and the flash figure swung 1.3–1.55 × between runs.
      const sealed = await sealAfter(f.gw.port, await metric(f.gw.port, 'shadowgate_history_compactions_total'), 180_000);
      const rss: number[] = [];
      const eld = { p99: 0, max: 0 };
      const w0 = writeBytes(pid);
      const h0 = dirBytes(path.join(f.dataDir, 'history'));
      const s0 = await metric(f.gw.port, 'shadowgate_history_recorded_samples_total');
      const hw0 = await metric(f.gw.port, 'shadowgate_history_written_bytes_total');
      const d0 = await metric(f.gw.port, 'shadowgate_history_dropped_samples_total');
      const t0 = performance.now();
      let seals = 0;
      for (let last = -1; ; ) {
        await settle(5000);
        rss.push(rssOf(pid));
        const text = await scrape(f.gw.port);
        eld.p99 = Math.max(eld.p99, 1000 * valueOf(text, 'shadowgate_event_loop_delay_window_p99_seconds'));
        eld.max = Math.max(eld.max, 1000 * valueOf(text, 'shadowgate_event_loop_delay_window_max_seconds'));
        const elapsed = performance.now() - t0;
        if (elapsed < WINDOW_S * 1000) continue;
        // Past the window: on to the end of the next seal (bounded), so the window holds whole seal cycles.
        const now = valueOf(text, 'shadowgate_history_compactions_total');
        if ((last >= 0 && now > last) || elapsed >= (WINDOW_S + 180) * 1000) {
          seals = now - sealed;
          break;
        }
        if (last < 0) last = now;
      }
      const seconds = (performance.now() - t0) / 1000;
      const written = writeBytes(pid) - w0;
      const historyDir = dirBytes(path.join(f.dataDir, 'history')) - h0;
      // The floor: the samples' own bytes, 12 a numeric sample (u32 time offset + f64 value; F's text points are
      // constant, so its samples in the window are numeric).
      const samples = (await metric(f.gw.port, 'shadowgate_history_recorded_samples_total')) - s0;
      const dropped = (await metric(f.gw.port, 'shadowgate_history_dropped_samples_total')) - d0;
      const historyWrote = (await metric(f.gw.port, 'shadowgate_history_written_bytes_total')) - hw0;
      const floor = samples * 12;
      const perDay = (bytes: number): string => `${((bytes / seconds) * DAY_S / MB).toFixed(0)} MB/day`;
      const mean = rss.reduce((a, b) => a + b, 0) / rss.length;
      const peak = Math.max(...rss);
      const points = FLEET_F.devices * POINTS_PER_DEVICE;
      const memoryMax = unitMemoryMax();
      results.push(
        { name: 'memory: fleet F RSS', measured: peak / MB, target: 120, unit: 'MB', higherIsBetter: false, note: `${config}; mean ${(mean / MB).toFixed(1)} MB over ${seconds.toFixed(0)} s` },
        { name: 'memory: per point over 1 device × 100 points', measured: (peak - rssOne) / (points - POINTS_PER_DEVICE), target: 400, unit: 'B', higherIsBetter: false, note: `1 × 100 gateway ${(rssOne / MB).toFixed(1)} MB, same features` },
        { name: 'memory: RSS spread over the window', measured: ((peak - Math.min(...rss)) / mean) * 100, target: 10, unit: '% (±5%)', higherIsBetter: false, note: `${rss.length} samples every 5 s after a 30 s warm-up` },
        { name: 'memory: unit MemoryMax headroom over F', measured: (1 - peak / memoryMax) * 100, target: 30, unit: '%', higherIsBetter: true, note: `MemoryMax ${(memoryMax / MB).toFixed(0)} MB` },
        { name: 'flash writes, fleet F, over the samples\' bytes', measured: written / floor, target: 1.5, unit: '×', higherIsBetter: false,
          note: `${perDay(written)} written (/proc/pid/io write_bytes) against ${Math.round(samples / seconds).toLocaleString('en')} samples/s × 12 B = ${perDay(floor)}; ` +
            `history ${(historyWrote / floor).toFixed(2)}× (${perDay(historyWrote)}: log blocks and seals, shadowgate_history_written_bytes_total), ` +
            `the rest ${((written - historyWrote) / floor).toFixed(2)}× (${perDay(written - historyWrote)}: the shadow journal and snapshots, registry, page rewrites); ` +
            `the history directory grew ${perDay(historyDir)}; ${seals} seal(s) in the window, which starts and ends just after one` },
        { name: 'history samples dropped during the window', measured: dropped, target: 0, unit: 'samples', higherIsBetter: false, note: `${samples.toLocaleString('en')} recorded` },
        { name: 'event loop p99 (worst 10 s window), F with snapshots', measured: eld.p99, target: 20, unit: 'ms', higherIsBetter: false, note: 'the gateway\'s own event-loop monitor, read by one /metrics scrape every 5 s' },
        { name: 'event loop max, F with snapshots', measured: eld.max, target: 50, unit: 'ms', higherIsBetter: false },
      );

      const pathQ = `http://127.0.0.1:${f.gw.port}/api/v1/shadow/devicePoint?id=dev-7&point=f0`;
      const body = await (await fetch(pathQ)).text();
      await rest(f.gw.port, 2);
      const ours = await rest(f.gw.port, 8);
      const bare = await bareServer(body);
      try {
        await rest(bare.port, 2).catch(() => undefined);
        const base = await autocannon({ url: `http://127.0.0.1:${bare.port}/`, connections: 50, duration: 8, pipelining: 1 });
        results.push({ name: 'REST devicePoint with F running vs bare node:http', measured: ours.rps / base.requests.average, target: 0.8, unit: '×', higherIsBetter: true,
          note: `${Math.round(ours.rps)} vs ${Math.round(base.requests.average)} req/s, p99 ${ours.p99} vs ${base.latency.p99} ms, errors ${ours.errors}` });
      } finally {
        await stopChild(bare.child);
      }
      const half = await autocannon({ url: pathQ, connections: 10, duration: 8, overallRate: Math.round(ours.rps / 2) });
      results.push({ name: 'REST devicePoint p99 at half that load', measured: half.latency.p99, target: 2, unit: 'ms', higherIsBetter: false, note: `${Math.round(half.requests.average)} req/s` });
    } finally {
      await stop(f);
    }

    // Start-to-ready with F restored: the snapshot saved on the stop above.
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const again = await startChild(f.config, 60_000, entry);
      times.push(again.readyMs);
      await again.stop();
    }
    times.sort((a, b) => a - b);
    results.push({ name: 'start-to-ready, F restored from disk (median of 3)', measured: times[1]!, target: 1000, unit: 'ms', higherIsBetter: false, note: `${entryText}; process spawn included` });
    results.push(await idleWrites(dir));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) report(await benchFootprint());
