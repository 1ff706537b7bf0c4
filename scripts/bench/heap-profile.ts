/**
 * Where fleet F's memory is: starts the release bundle (as footprint.ts does) with N devices of the fleet model
 * and every feature on, lets it run, then prints RSS split by /proc/<pid>/smaps_rollup and the V8 heap used, and
 * writes a heap snapshot (SIGUSR2, --heapsnapshot-signal) for `node scripts/bench/heap-top.mjs FILE` to sum up
 * by constructor and retainer.
 * `HEAP_DEVICES` (default 1000) and `HEAP_WAIT_S` (default 90) set the fleet and the settle time;
 * `HEAP_SUB=0` leaves the MQTT subscriber out; `HEAP_SNAPSHOT=0` skips the snapshot (writing one costs about the heap's size again in RSS).
 * Run alone: `node --import tsx scripts/bench/heap-profile.ts OUTDIR`.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, entryOf, MAIN, rssOf, startChild, stopChild } from './child.js';
import { describeFleet, FLEET_F, writeFleet } from './fleet-f.js';
import { freePort } from '../../test/drivers/modbus-rig.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MB = 2 ** 20;
const out = path.resolve(process.argv[2] ?? '.');
const devices = Number(process.env.HEAP_DEVICES ?? 1000);
const waitS = Number(process.env.HEAP_WAIT_S ?? 90);
const snapshot = process.env.HEAP_SNAPSHOT !== '0';
const fleet = { ...FLEET_F, devices };

function rollup(pid: number): string {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN) / 1024;
  return `Rss ${kb('Rss').toFixed(1)} MB (anon ${kb('Anonymous').toFixed(1)}, file ${(kb('Rss') - kb('Anonymous')).toFixed(1)})`;
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-heap-'));
// The snapshot is written to the child's working directory: `out`.
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2`.trim();
try {
  const ports = { http: await freePort(), mqtt: await freePort(), ws: await freePort() };
  const config = path.join(dir, 'fleet.json');
  await writeFleet(config, path.join(dir, 'data'), ports, fleet);
  // HEAP_BUNDLE: another build's bundle (a before/after comparison).
  const entry = process.env.HEAP_BUNDLE ? entryOf(process.env.HEAP_BUNDLE) : existsSync(BUNDLE) ? entryOf(BUNDLE) : entryOf(MAIN);
  const cwd = process.cwd();
  process.chdir(out);
  const gw = await startChild(config, 60_000, entry).finally(() => process.chdir(cwd));
  const sub = process.env.HEAP_SUB === '0' ? null : spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(ports.mqtt), '-t', 'shadowgate/#', '-t', 'homeassistant/#', '-q', '0'], { stdio: 'ignore' });
  try {
    const pid = gw.child.pid!;
    console.log(`${describeFleet(fleet)}; ${entry.file}`);
    // CPU seconds (user + system) from /proc/<pid>/stat, clock ticks of 1/100 s.
    const cpu = (): number => {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) / 100;
    };
    for (let t = 0; t < waitS; t += 15) {
      const c0 = cpu();
      await settle(15_000);
      const p99 = await metric(gw.port, 'shadowgate_event_loop_delay_window_p99_seconds');
      console.log(`  CPU ${((cpu() - c0) / 15 * 100).toFixed(0)}% of a core, event loop p99 ${(p99 * 1000).toFixed(1)} ms`);
      const outbox = await metric(gw.port, 'shadowgate_mqtt_broker_outbox_pending');
      console.log(`t=${t + 15}s outbox ${outbox} RSS ${(rssOf(pid) / MB).toFixed(1)} MB; ${rollup(pid)}; heap used ${((await metric(gw.port, 'nodejs_heap_used_bytes')) / MB).toFixed(1)} MB`);
    }
    // The largest mappings: V8's heap pages are 256 KB each; malloc's arenas and mmap'd buffers are the rest.
    const maps: { name: string; rss: number }[] = [];
    let cur = '';
    for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) cur = line.split(/\s+/).slice(5).join(' ') || `[anon ${line.split(' ')[0]}]`;
      const m = /^Rss:\s+(\d+)/.exec(line);
      if (m) maps.push({ name: cur, rss: Number(m[1]) * 1024 });
    }
    const small = maps.filter((m) => m.rss < MB);
    console.log(`mappings under 1 MB: ${small.length}, ${(small.reduce((a, m) => a + m.rss, 0) / MB).toFixed(1)} MB`);
    for (const m of maps.filter((x) => x.rss >= MB).sort((a, b) => b.rss - a.rss)) console.log(`  ${(m.rss / MB).toFixed(1).padStart(6)} MB ${m.name}`);
    if (snapshot) {
      const before = new Set(readdirSync(out));
      process.kill(pid, 'SIGUSR2');
      const t0 = performance.now();
      let file: string | undefined;
      while (!file && performance.now() - t0 < 120_000) {
        await settle(2000);
        file = readdirSync(out).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
      }
      // Streamed out after V8 has walked the heap: done when the file is non-empty and stops growing.
      let size = -1;
      while (file && performance.now() - t0 < 300_000) {
        await settle(3000);
        const now = statSync(path.join(out, file)).size;
        if (now > 0 && now === size) break;
        size = now;
      }
      console.log(file ? `snapshot ${path.join(out, file)}` : 'no snapshot written');
    }
  } finally {
    if (sub) await stopChild(sub);
    await gw.stop();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
