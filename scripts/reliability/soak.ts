/**
 * Soak (issue 15 item 6): fleet F changing (soak/fleet.ts) on the gateway started as the systemd unit starts
 * it, its REST and MQTT capacity measured first in the same run, then half of each, together, for 10 minutes
 * (1 hour with SOAK=1h; 30 s reduced). Sampled every 10 s (2 s reduced): RSS, open fds, CPU, the gateway's
 * own event-loop delay, the log. After the warm-up (the first 20 %): RSS not growing (its trend and its last
 * fifth's median each within 5 % of the mean; a transient above the trend at most 10 %, soak/checks.ts), no error
 * line, event-loop p99 steady (last fifth ≤ 1.5 × first fifth, widened by the CPU the machine took from the
 * gateway's loop: soak/checks.ts), fds flat; and the load was really served.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loopLoad, type Sample } from './soak/checks.js';
import { FLEET, READ_POINT, READER, RW_POINT, SETTER, writeFleetF } from './soak/fleet.js';
import { launchPlan, startGateway, STOP_TIMEOUT_MS, type SoakGateway } from './soak/gateway.js';
import { pacedSets, setCapacity, subscribeAll, type Setter, type Subscriber } from './soak/mqtt-load.js';
import { missRow, soakRow } from './soak/report.js';
import { pacedRest, restCapacity, type PacedLoad } from './soak/rest-load.js';
import { schedOf, takeSample } from './soak/sampler.js';
import type { Campaign, Row } from './table.js';

export interface SoakOptions {
  seconds: number;
  intervalS: number;
  capacityS: number;
  /**
   * Seconds the fleet runs before its capacity is measured and the soak starts: a 100k-point gateway is still
   * settling for its first ~30 s (discovery in slices, the first generation, the first history log of every
   * series). The full soak's 20% warm-up covers it; the 30 s reduced one would measure start-up rather than
   * steady state.
   */
  settleS: number;
  log: (line: string) => void;
  /** Diagnosis only (e.g. another heap cap); the campaign runs the unit's flags. */
  flags?: string[];
  /** MiB a minute planted as a leak in the gateway (SOAK_PLANT_LEAK): the run must then be a MISS. */
  plantLeak?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MB = (b: number): string => (b / 2 ** 20).toFixed(1);
const int = (x: number): string => Math.round(x).toLocaleString('en');
/** Capacity measurements at most, and the pause between them, when one answered nothing (see runSoak). */
const CAPACITY_TRIES = 4;
const CAPACITY_PAUSE_S = 15;

/** The retained burst a `#` subscriber gets on connect (every device's state and availability), then 2 s. */
async function waitRetained(sub: Subscriber, log: (l: string) => void): Promise<void> {
  const end = Date.now() + 15_000;
  while (sub.count() < 2 * FLEET.devices && Date.now() < end && sub.alive()) await sleep(100);
  log(`# subscriber: ${int(sub.count())} messages on connect (${sub.alive() ? 'connected' : 'exited'})`);
  await sleep(2000);
}

export async function runSoak(o: SoakOptions): Promise<Row> {
  if (spawnSync('sh', ['-c', 'command -v mosquitto_sub']).status !== 0) return missRow(o.seconds, 'not run', 'needs mosquitto_sub (Debian mosquitto-clients)');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-soak-'));
  let gw: SoakGateway | undefined;
  let sub: Subscriber | undefined;
  let rest: PacedLoad | undefined;
  let sets: Setter | undefined;
  try {
    const configFile = path.join(dir, 'config.json');
    await writeFleetF(configFile);
    const how = launchPlan(o.flags).how + (o.plantLeak ? `, a leak of ${o.plantLeak} MiB/min planted (the verdict must MISS)` : '');
    try {
      gw = await startGateway({
        configFile, dataDir: path.join(dir, 'data'), readyTimeoutMs: 90_000, flags: o.flags, ...(o.plantLeak ? { plantLeak: o.plantLeak } : {}),
      });
    } catch (err) {
      return missRow(o.seconds, `${how}; did not start`, (err as Error).message);
    }
    o.log(`gateway pid ${gw.pid}: ${how}`);
    sub = subscribeAll(gw.mqttPort, READER, path.join(dir, 'subscriber.out'));
    await waitRetained(sub, o.log);
    // Before the capacity, not after, in the reduced and the full soak: Home Assistant discovery (100k configs
    // in slices) starts once the gateway serves, and a capacity taken while it ran measured 0 MQTT sets/s (the
    // full soak on a loaded machine, 10 s windows): the soak then runs without its set load (and is a miss).
    if (o.settleS > 0) await sleep(o.settleS * 1000);

    // Both at once, as the soak runs them: half of each is then half of what the one event loop can do for
    // this mix (each measured alone, half + half would be all of it).
    const url = `http://127.0.0.1:${gw.httpPort}/api/v1/shadow/devicePoint?id=dev-7&point=${READ_POINT}`;
    const mqttPort = gw.mqttPort;
    const pid = gw.pid;
    // The loop's schedstat from the start of the last measurement to the first sample after it: how much CPU
    // the machine left the gateway while its capacity was taken (soak/report.ts scales the targets by it).
    let capFrom: { t: number; sched: Sample['sched'] } = { t: 0, sched: null };
    const measure = () => {
      capFrom = { t: performance.now() / 1000, sched: schedOf(pid) };
      return Promise.all([
        restCapacity(url, o.capacityS),
        setCapacity(mqttPort, SETTER, RW_POINT, FLEET.devices, o.capacityS),
      ]);
    };
    let [restCap, setCap] = await measure();
    // A machine slower than the settle (or loaded) can still be sending discovery: then no set is answered in
    // the window, and the soak would run without its set load. Measure again after a pause, a few times.
    for (let tries = 1; tries < CAPACITY_TRIES && (restCap.rps === 0 || setCap.rate === 0); tries++) {
      o.log(`capacity ${tries}: REST ${int(restCap.rps)} req/s, MQTT set ${int(setCap.rate)} results/s: measured again in ${CAPACITY_PAUSE_S} s`);
      await sleep(CAPACITY_PAUSE_S * 1000);
      [restCap, setCap] = await measure();
    }
    o.log(`capacity, both at once: REST ${int(restCap.rps)} req/s (p99 ${restCap.p99} ms, ${restCap.errors} errors), MQTT set ${int(setCap.rate)} results/s (${setCap.failed} failed)`);
    if (gw.exitedAt() !== null) {
      return missRow(o.seconds, `${how}; died ${(gw.exitedAt()! / 1000).toFixed(0)} s after start, while capacity was measured`, gw.exitText());
    }

    const first = await takeSample(gw.pid, gw.httpPort, 0);
    const capacityStretch = loopLoad(capFrom, { t: performance.now() / 1000, sched: first.sched }).stretch;
    const sub0 = sub.count();
    const t0 = performance.now();
    rest = pacedRest(url, restCap.rps / 2);
    sets = await pacedSets(gw.mqttPort, SETTER, RW_POINT, FLEET.devices, setCap.rate / 2);
    const samples: Sample[] = [];
    let died: string | null = null;
    for (let i = 1; i * o.intervalS <= o.seconds; i++) {
      await sleep(t0 + i * o.intervalS * 1000 - performance.now());
      const t = (performance.now() - t0) / 1000;
      try {
        if (gw.exitedAt() !== null) throw new Error('exited');
        samples.push(await takeSample(gw.pid, gw.httpPort, t));
      } catch (err) {
        await sleep(200); // let the exit (and its stderr) arrive
        died = `gateway ${gw.exitedAt() !== null ? 'died' : `did not answer (${(err as Error).message})`} ${t.toFixed(0)} s into the soak: ${gw.exitText()}`;
        break;
      }
      const s = samples.at(-1)!;
      if (o.seconds <= 60 ? i === 1 : i % Math.max(1, Math.round(60 / o.intervalS)) === 0) {
        o.log(`t=${t.toFixed(0)} s RSS ${MB(s.rss)} MB, heap ${MB(s.heapUsed)} MB, fds ${s.fds}, event-loop p99 ${s.eld?.p99.toFixed(1) ?? '?'} ms, ` +
          `REST ${int(rest.ok)} ok, set ${int(sets.ok)} ok, # ${int(sub.count() - sub0)} msgs, errors ${gw.log.errors}`);
      }
    }
    const elapsed = (performance.now() - t0) / 1000;
    const subscriber = { msgs: sub.count() - sub0, alive: sub.alive() };
    // Counted now: the gateway is then stopped under the same load, as systemd stops it on an update, and
    // a request cut off by the stop is not a failure of the soak (an error the stop logs is).
    const served = {
      rest: { ok: rest.ok, failed: rest.failed, behind: rest.behind(), firstFailure: rest.firstFailure },
      sets: { ok: sets.ok, failed: sets.failed, inFlight: sets.sent - sets.ok - sets.failed, behind: sets.behind(), firstFailure: sets.firstFailure },
    };
    const stopped = await gw.stop();
    await rest.stop();
    await sets.stop();
    const row = soakRow({
      seconds: o.seconds, intervalS: o.intervalS, how, capacity: { rest: restCap.rps, restP99: restCap.p99, sets: setCap.rate, stretch: capacityStretch },
      first, samples, elapsed, subscriber, died, log: gw.log, ...served,
      stop: { ...stopped, clean: stopped.code === 0 && stopped.ms < STOP_TIMEOUT_MS },
    });
    o.log(`${row.ok ? 'ok' : 'MISS'}: ${row.figure}`);
    return row;
  } finally {
    await rest?.stop().catch(() => {});
    await sets?.stop().catch(() => {});
    await sub?.stop();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

export const soak: Campaign = async ({ reduced, log }) => {
  const seconds = reduced ? 30 : process.env.SOAK === '1h' ? 3600 : 600;
  // SOAK_PLANT_LEAK=MB: the verdict's own check, by hand (`--only soak`); its row must read MISS.
  const plantLeak = Number(process.env.SOAK_PLANT_LEAK ?? 0);
  return [await runSoak({ seconds, intervalS: reduced ? 2 : 10, capacityS: reduced ? 2 : 10, settleS: 30, log, ...(plantLeak > 0 ? { plantLeak } : {}) })];
};
