/**
 * The REST request path on its own: GET /api/v1/shadow/devicePoint against the release bundle vs a bare
 * node:http server sending the same bytes (autocannon, 50 connections), the CPU each request costs the
 * gateway (its /proc/<pid>/stat ticks over the window, the background's rate taken off) and the p99 at half
 * the gateway's rate. CPU per request is the figure machine load moves least; req/s and p99 are wall-clock.
 *   REST_FLEET=small (default: 1 device × 100 points, the footprint bench's features) or F (fleet F);
 *   REST_RUNS (default 3) rounds of gateway then bare; REST_SECONDS (default 8) per window;
 *   REST_PROFILE=half (or 1): the gateway under --cpu-prof, the first half-load window's self time, the gateway's
 *   own paths and the longest busy stretches of the loop printed (the figures then include the profiler);
 *   REST_PROFILE=background: the same for the background window (no requests: what F costs by itself);
 *   REST_BASELINE=<dir>: a second build (a copy of an earlier build/shadowgate/) measured in the same runs, in turn.
 * Run: `nice -n 19 make dist && node --import tsx scripts/bench/rest-path.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { stopChild } from './child.js';
import { describeFleet, FLEET_1, FLEET_F, writeFleet } from './fleet-f.js';
import { bareServer } from './footprint.js';
import { snapshotEntry, startGateway } from './modbus-bus/gateway.js';
import { readProfile } from './modbus-bus/profile.js';
import { longTurns } from './profile-turns.js';
import { freePort } from '../../test/drivers/modbus-rig.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FLEET = process.env.REST_FLEET === 'F' ? FLEET_F : FLEET_1;
const RUNS = Number(process.env.REST_RUNS ?? 3);
const SECONDS = Number(process.env.REST_SECONDS ?? 8);
/** `half`: the half-load window; `background`: the gateway without requests (F's own work). */
const PROFILE = process.env.REST_PROFILE === 'background' ? 'background' : process.env.REST_PROFILE ? 'half' : null;
const BACKGROUND_MS = FLEET === FLEET_F ? 20_000 : 5_000;
const BASELINE = process.env.REST_BASELINE;
/**
 * CPU per request falls as the rate rises (more requests per wake-up), so builds are compared at one fixed
 * rate too, low enough for any of them: REST_FIXED_RATE req/s (default 2,000) over 10 connections.
 */
const FIXED_RATE = Number(process.env.REST_FIXED_RATE ?? 2000);
const TICK_MS = 10; // USER_HZ 100 on Linux

/** utime + stime of a process or thread (`/proc/<pid>/task/<tid>/stat`), ms. */
function statMs(file: string): number {
  const fields = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
const cpuMs = (pid: number): number => statMs(`/proc/${pid}/stat`);
/** The main (JS) thread's share: the rest is V8's GC and compiler helpers and libuv's pool. */
const mainMs = (pid: number): number => statMs(`/proc/${pid}/task/${pid}/stat`);

interface Window { rps: number; p99: number; errors: number; requests: number; cpuPerReqUs: number; mainPerReqUs: number }

/** One autocannon window; CPU per request with `backgroundPerS` (the process's rate without requests) taken off. */
async function load(url: string, pid: number, bg: Background, o: { connections: number; overallRate?: number }): Promise<Window> {
  const c0 = cpuMs(pid);
  const m0 = mainMs(pid);
  const r = await autocannon({ url, connections: o.connections, duration: SECONDS, pipelining: 1, ...(o.overallRate ? { overallRate: o.overallRate } : {}) });
  const used = cpuMs(pid) - c0 - bg.all * SECONDS;
  const main = mainMs(pid) - m0 - bg.main * SECONDS;
  const requests = r.requests.average * SECONDS;
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx, requests, cpuPerReqUs: (used / requests) * 1000, mainPerReqUs: (main / requests) * 1000 };
}

/** CPU ms per second without requests: the whole process and its main thread. */
interface Background { all: number; main: number }
const NO_BACKGROUND: Background = { all: 0, main: 0 };

async function background(pid: number, ms: number): Promise<Background> {
  const c0 = cpuMs(pid);
  const m0 = mainMs(pid);
  await settle(ms);
  return { all: (cpuMs(pid) - c0) / (ms / 1000), main: (mainMs(pid) - m0) / (ms / 1000) };
}

const f1 = (n: number): string => n.toFixed(1);

interface Build { file: string; label: string; name: string }

interface Round { ours: Window; half: Window; fixed: Window; bg: Background; body: string }

/**
 * One gateway of `build` on fleet `FLEET`: started, settled, its background CPU taken, then the full-load
 * window (50 connections) and the half-load one; stopped. With `profDir`, under --cpu-prof, and the
 * half-load window's profile printed after the stop.
 */
async function round(dir: string, build: Build, profDir: string | null): Promise<Round> {
  const ports = { http: await freePort(), mqtt: await freePort(), ws: await freePort() };
  const config = path.join(dir, `${build.name}.json`);
  const dataDir = await mkdtemp(path.join(dir, `${build.name}-data-`));
  await writeFleet(config, dataDir, ports, FLEET);
  const gw = await startGateway(build.file, config, profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [], 120_000);
  let sub: ChildProcess | null = null;
  try {
    if (FLEET.mqtt) sub = spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(ports.mqtt), '-t', 'shadowgate/#', '-t', 'homeassistant/#', '-q', '0'], { stdio: 'ignore' });
    const url = `http://127.0.0.1:${gw.port}/api/v1/shadow/devicePoint?id=dev-0&point=f0`;
    await settle(FLEET === FLEET_F ? 40_000 : 5_000);
    const body = await (await fetch(url)).text();
    const bgFrom = performance.now() - gw.spawnedAt;
    const bg = await background(gw.pid, BACKGROUND_MS);
    const bgTo = performance.now() - gw.spawnedAt;
    await load(url, gw.pid, bg, { connections: 50 }); // warm-up (JIT, sockets)
    const ours = await load(url, gw.pid, bg, { connections: 50 });
    // The profile is taken at half load: on a saturated loop (and a busy machine) the samples in a write
    // that wakes the client also count the time the client then runs on the gateway's core.
    const from = performance.now() - gw.spawnedAt;
    const half = await load(url, gw.pid, bg, { connections: 10, overallRate: Math.round(ours.rps / 2) });
    const to = performance.now() - gw.spawnedAt;
    const fixed = await load(url, gw.pid, bg, { connections: 10, overallRate: FIXED_RATE });
    if (sub) await stopChild(sub);
    sub = null;
    await gw.stop(); // the profile is written as the process exits
    if (profDir) printProfile(profDir, PROFILE === 'background' ? [bgFrom, bgTo] : [from, to], build.file);
    return { ours, half, fixed, bg, body };
  } finally {
    if (sub) await stopChild(sub);
    await gw.stop();
  }
}

function printProfile(profDir: string, [from, to]: [number, number], bundle: string): void {
  const file = path.join(profDir, readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))!);
  const p = readProfile(file, from, to, bundle, 30);
  console.log(`profile of the ${PROFILE} window: ${p.busy} busy of ${p.total} samples (${f1((p.busy / p.total) * 100)}%), ${p.intervalMs.toFixed(2)} ms apart`);
  for (const e of p.top) console.log(`  self ${f1(e.pct).padStart(5)}%  ${e.fn}  ${e.where}`);
  console.log('by module:');
  for (const m of p.modules) console.log(`  ${f1(m.pct).padStart(5)}%  ${m.module}`);
  console.log('the gateway\'s own paths (inclusive):');
  for (const e of p.ownPaths) console.log(`  ${f1(e.pct).padStart(5)}%  ${e.fn}  ${e.where}`);
  const t = longTurns(file, bundle, from, to);
  console.log(`the loop's longest busy stretches (no idle sample between; ${f1(t.busyMs)} ms busy of ${f1(t.spanMs)} ms):`);
  for (const turn of t.turns) console.log(`  ${f1(turn.ms).padStart(6)} ms at ${f1(turn.atMs / 1000)} s: ${turn.top.join(', ')}`);
}

async function bareRound(body: string): Promise<Window> {
  const bare = await bareServer(body);
  try {
    await load(`http://127.0.0.1:${bare.port}/`, bare.child.pid!, NO_BACKGROUND, { connections: 50 });
    return await load(`http://127.0.0.1:${bare.port}/`, bare.child.pid!, NO_BACKGROUND, { connections: 50 });
  } finally {
    await stopChild(bare.child);
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-restpath-'));
  try {
    const current = snapshotEntry(dir);
    const builds: Build[] = [{ ...current, name: 'this build' }];
    if (BASELINE) builds.push({ file: path.resolve(BASELINE, 'shadowgate.mjs'), label: `baseline ${BASELINE}`, name: 'baseline' });
    console.log(`rest-path: ${describeFleet(FLEET)}; ${builds.map((b) => `${b.name}: ${b.label}`).join('; ')}; ${SECONDS} s windows, ${RUNS} runs; load ${os.loadavg().map(f1).join(' ')}`);
    const last = new Map<Build, Round>();
    for (let run = 0; run < RUNS; run++) {
      let body = '';
      // Alternate which build goes first: a later round may meet a machine busier or quieter than the first.
      for (const build of run % 2 === 0 ? builds : [...builds].reverse()) {
        const profDir = PROFILE && run === 0 && build === builds[0] ? path.join(dir, 'prof') : null;
        const r = await round(dir, build, profDir);
        body = r.body;
        console.log(`run ${run + 1}, ${build.name}: ${Math.round(r.ours.rps)} req/s, p99 ${r.ours.p99} ms, errors ${r.ours.errors}, CPU per request ${f1(r.ours.cpuPerReqUs)} µs ` +
          `(main thread ${f1(r.ours.mainPerReqUs)}); half load ${Math.round(r.half.rps)} req/s p99 ${r.half.p99} ms, CPU per request ${f1(r.half.cpuPerReqUs)} µs ` +
          `(main thread ${f1(r.half.mainPerReqUs)}); at ${FIXED_RATE} req/s: CPU per request ${f1(r.fixed.cpuPerReqUs)} µs (main thread ${f1(r.fixed.mainPerReqUs)}), p99 ${r.fixed.p99} ms; background ${f1(r.bg.all / 10)}% of a core (main thread ${f1(r.bg.main / 10)}%); body ${r.body.length} B; load ${os.loadavg().map(f1).join(' ')}`);
        last.set(build, r);
      }
      const base = await bareRound(body);
      console.log(`run ${run + 1}, bare node:http: ${Math.round(base.rps)} req/s, p99 ${base.p99} ms, CPU per request ${f1(base.cpuPerReqUs)} µs (main thread ${f1(base.mainPerReqUs)}); ` +
        builds.map((b) => {
          const r = last.get(b)!;
          return `${b.name} ${(r.ours.rps / base.rps).toFixed(2)}× req/s, ${(base.cpuPerReqUs / r.ours.cpuPerReqUs).toFixed(2)}× CPU per request`;
        }).join(', '));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
