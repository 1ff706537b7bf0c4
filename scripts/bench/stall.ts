/**
 * Issue 16 item 3: event-loop stalls while fleet F runs with everything heavy at once — a shadow snapshot
 * (every 10 s), the upstream bridge reconnecting and draining a queue of ≥ 100k messages, and a 30-day
 * history aggregate query. The gateway measures itself (monitorEventLoopDelay, 10 s windows in /metrics);
 * the worst window during the storm is the figure. Release bundle with the unit's flags.
 * Run alone: `node --import tsx scripts/bench/stall.ts`.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openHistory } from '../../src/store/history.js';
import { silentLogger } from '../../src/util/logger.js';
import { Mosquitto, freePort, hasMosquitto } from '../../test/export/mosquitto.js';
import { BUNDLE, entryOf, MAIN, startChild } from './child.js';
import { describeFleet, FLEET_F, fleetConfig } from './fleet-f.js';
import { report, type Result } from './report.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DAY = 86_400_000;
const QUEUE_TARGET = 100_000;

/** 30 days of one sample a minute for 20 of F's points, written through the store as the gateway would have. */
async function prefillHistory(dir: string): Promise<number> {
  const end = Date.now();
  let t = end - 29.5 * DAY;
  const clock = { now: () => t, mono: () => t };
  const store = await openHistory({ dir, retention: 30 * DAY, maxDisk: 512 * 2 ** 20, clock, log: silentLogger, flushInterval: 0 });
  let n = 0;
  for (; t < end - 60_000; t += 60_000) {
    for (let d = 0; d < 20; d++) store.record(`dev-${d}`, 'f0', t, 200 + Math.sin(t / 3.6e6 + d) * 20);
    n += 20;
    if (n % 20_000 === 0) await store.flush();
  }
  await store.close();
  return n;
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

export async function benchStall(): Promise<Result[]> {
  if (!hasMosquitto) return [];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-stall-'));
  const upstream = new Mosquitto(await freePort(), dir);
  const entry = existsSync(BUNDLE) ? entryOf(BUNDLE) : entryOf(MAIN);
  try {
    const dataDir = path.join(dir, 'data');
    const samples = await prefillHistory(path.join(dataDir, 'history'));
    const config = fleetConfig(dataDir, { http: await freePort(), mqtt: await freePort(), ws: await freePort() }, FLEET_F);
    (config.mqtt as Record<string, unknown>).bridge = { url: `mqtt://127.0.0.1:${upstream.port}`, topic_prefix: 'site' };
    const file = path.join(dir, 'f.json');
    await writeFile(file, JSON.stringify(config));
    const gw = await startChild(file, 60_000, entry);
    try {
      // The upstream is away: the bridge queues on disk until it holds the target.
      const t0 = Date.now();
      let queued = 0;
      while (queued < QUEUE_TARGET && Date.now() - t0 < 240_000) {
        await settle(2000);
        queued = await metric(gw.port, 'shadowgate_mqtt_bridge_queue_messages');
      }
      await settle(10_000); // a clean window before the storm, so the figure is the storm's
      await upstream.start();
      const worst = { p99: 0, max: 0 };
      const aggregate = `http://127.0.0.1:${gw.port}/api/v1/history/aggregate?device=dev-3&point=f0&function=avg&interval=1h&start=${Date.now() - 30 * DAY}&end=${Date.now()}`;
      let queries = 0;
      let buckets = 0;
      const stormEnd = Date.now() + 30_000;
      while (Date.now() < stormEnd) {
        const body = await (await fetch(aggregate)).json() as { data: unknown[] | null };
        buckets = body.data?.length ?? 0;
        queries++;
        await settle(2500);
        worst.p99 = Math.max(worst.p99, 1000 * (await metric(gw.port, 'shadowgate_event_loop_delay_window_p99_seconds')));
        worst.max = Math.max(worst.max, 1000 * (await metric(gw.port, 'shadowgate_event_loop_delay_window_max_seconds')));
      }
      await settle(10_000); // the window holding the storm's end is complete
      worst.p99 = Math.max(worst.p99, 1000 * (await metric(gw.port, 'shadowgate_event_loop_delay_window_p99_seconds')));
      worst.max = Math.max(worst.max, 1000 * (await metric(gw.port, 'shadowgate_event_loop_delay_window_max_seconds')));
      const left = await metric(gw.port, 'shadowgate_mqtt_bridge_queue_messages');
      const note = `${describeFleet(FLEET_F)}; bridge draining ${queued.toLocaleString('en')} queued messages (${left.toLocaleString('en')} left after 40 s), ` +
        `${queries} 30-day aggregates (${buckets} hourly buckets over ${samples.toLocaleString('en')} prefilled samples), snapshots every 10 s`;
      return [
        { name: 'event loop p99 during the storm (worst 10 s window)', measured: worst.p99, target: 20, unit: 'ms', higherIsBetter: false, note },
        { name: 'event loop max during the storm', measured: worst.max, target: 50, unit: 'ms', higherIsBetter: false },
      ];
    } finally {
      await gw.stop();
    }
  } finally {
    await upstream.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) report(await benchStall());
