/**
 * Bus fairness on the pymodbus rig (issue 11 item 2): while a client fires 20 readPoint/s over REST at a
 * dead unit, each healthy unit on the same 9600-baud line keeps ≥ 90% of its unloaded poll rate, the
 * requests to the dead unit fail fast (it is backed off), the queue stays bounded and memory flat;
 * identical reads in flight share one request; past the bound a client gets `bus busy`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../helpers/http.js';
import { watchLateness } from '../helpers/lateness.js';
import { needs } from '../helpers/peers.js';
import { rigConfig, withRigGateway } from '../helpers/rig-gateway.js';
import { PROBE_LINE_SHARE } from '../../src/drivers/modbus/poller.js';
import { rigUnavailable, sleep } from './modbus-rig.js';

const why = rigUnavailable();
const rigTest = needs(why, 'bus fairness tests');

type BusStats = { bus: { queueDepth: number }; devices: Record<string, { requests: number; timeouts: number; degraded: boolean }> };

rigTest('20 readPoint/s at a dead unit: healthy units keep >= 90% of their poll rate, the queue stays bounded', async () => {
  const model = { points: [{ name: 'u', type: 'int', modbus: { table: 'holding', address: 24, data_type: 'uint16' } }] };
  await withRigGateway('1,2', (rig, dir) => rigConfig(dir, rig, {
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, timeout: '300ms' }],
    models: { m: model },
    devices: [
      { id: 'a', model: 'm', bus: 'rs485', unit_id: 1, poll: '100ms' },
      { id: 'b', model: 'm', bus: 'rs485', unit_id: 2, poll: '100ms' },
      { id: 'dead', model: 'm', bus: 'rs485', unit_id: 9, poll: '1s' },
    ],
  }), async (g) => {
    const stats = (): BusStats => g.drivers.get('rs485')!.stats!() as BusStats;
    await waitFor(() => stats().devices['dead']!.degraded, 10_000, 'the dead unit backed off by its own polls');
    const polls = (): number[] => ['a', 'b'].map((id) => stats().devices[id]!.requests);
    // Polls per second the gateway's thread could run: time a busy job beside the tests kept it from a CPU
    // would otherwise read as unfairness in whichever window it fell.
    const rate = async (ms: number): Promise<number[]> => {
      const p0 = polls();
      const late = watchLateness();
      await sleep(ms);
      return polls().map((n, i) => ((n - p0[i]!) * 1000) / late.ownMs);
    };
    // The cycles the dead unit's first timeouts held back run at once when it is degraded (a fixed-rate grid):
    // counted in the unloaded window, they made it 10.7–11 polls/s against the configured 10.
    await sleep(2000);
    const unloaded = await rate(3000);

    const answers = new Map<string, number>();
    let maxQueue = 0;
    const heap0 = process.memoryUsage().heapUsed;
    let firing = true;
    const inFlight = new Set<Promise<void>>();
    const fire = async (): Promise<void> => {
      while (firing) {
        const p = fetch(`http://127.0.0.1:${g.httpPort}/api/v1/device/readPoint?id=dead&point=u`, { signal: AbortSignal.timeout(5000) })
          .then((r) => r.json() as Promise<{ errorMsg: string }>)
          .then((b) => {
            const kind = b.errorMsg.replace(/\d+/g, 'N').replace(/\(\/tmp\/[^)]*\)/, '(pty)');
            answers.set(kind, (answers.get(kind) ?? 0) + 1);
          }, () => {
            answers.set('request error', (answers.get('request error') ?? 0) + 1);
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
        maxQueue = Math.max(maxQueue, stats().bus.queueDepth);
        await sleep(50);
      }
    };
    const timeouts0 = stats().devices['dead']!.timeouts;
    const firing$ = fire();
    const loadedMs = 8000;
    const loaded = await rate(loadedMs);
    const lineTimeouts = stats().devices['dead']!.timeouts - timeouts0;
    firing = false;
    await firing$;
    await Promise.all(inFlight);
    const heapGrowth = (process.memoryUsage().heapUsed - heap0) / 1048576;
    const ratios = loaded.map((r, i) => r / unloaded[i]!);
    console.log(`  unloaded ${unloaded.map((r) => r.toFixed(1)).join(' / ')} polls/s; under 20 readPoint/s at the dead unit ` +
      `${loaded.map((r) => r.toFixed(1)).join(' / ')} (${ratios.map((r) => `${Math.round(r * 100)}%`).join(', ')}); ` +
      `line timeouts at the dead unit ${lineTimeouts}; max queue ${maxQueue}; heap ${heapGrowth >= 0 ? '+' : ''}${heapGrowth.toFixed(1)} MB; answers ${JSON.stringify([...answers])}`);
    // One probe per probe period reaches the line, whoever sends it (the poller or a client), counted on the
    // line: the bus's timeouts at the dead unit. Counted, not timed: a busy machine cannot add line timeouts.
    const probeMs = Math.max(1000, 300 / PROBE_LINE_SHARE);
    assert.ok(lineTimeouts <= Math.ceil(loadedMs / probeMs) + 1, `${lineTimeouts} requests timed out on the line at the dead unit in ${loadedMs} ms (one probe per ${probeMs} ms)`);
    // A client's read that finds a probe waiting for its answer is paused, not a timeout of its own.
    const timeouts = [...answers].filter(([k]) => /^timeout:/.test(k)).reduce((a, [, n]) => a + n, 0);
    // (+1: the window closes before the last read fired is answered.)
    assert.ok(timeouts <= lineTimeouts + 1, `${timeouts} client reads timed out, ${lineTimeouts} probes on the line`);
    for (const r of ratios) assert.ok(r >= 0.9, `a healthy unit kept ${Math.round(r * 100)}% of its poll rate`);
    assert.ok(maxQueue <= 20, `queue depth ${maxQueue}`);
    const total = [...answers.values()].reduce((a, b) => a + b, 0);
    assert.ok(total >= 100, `${total} requests answered`);
    assert.ok([...answers.keys()].some((k) => /not answering; requests to it are paused/.test(k)), 'fail fast names the backoff');
    assert.is(g.shadow.GetDeviceState('a'), 'Online');
    assert.is(g.shadow.GetDeviceState('b'), 'Online');
  });
});

rigTest('identical reads in flight share one request; past the bound: bus busy', async () => {
  await withRigGateway('1', (rig, dir) => rigConfig(dir, rig, {
    models: { m: { points: [
      { name: 'u', type: 'int', modbus: { table: 'holding', address: 24, data_type: 'uint16' } },
      { name: 'v', type: 'float', modbus: { table: 'input', address: 0, data_type: 'float32' } },
      { name: 'w', type: 'int', access: 'RW', modbus: { table: 'holding', address: 150, data_type: 'uint16' } },
    ] } },
    devices: [{ id: 'a', model: 'm', bus: 'rs485', unit_id: 1, poll: '1h' }],
  }), async (g) => {
    await waitFor(() => g.shadow.GetDevicePoint('a', 'u') === 1, 5000, 'first poll');
    const reqs = (): number => (g.drivers.get('rs485')!.stats!() as BusStats).devices['a']!.requests;
    const before = reqs();
    const same = await Promise.all(Array.from({ length: 10 }, () => g.io.readPoint('a', 'u')));
    assert.equal(same, Array(10).fill(1));
    assert.is(reqs() - before, 1, 'ten identical reads, one request');
    // 40 writes at once: one on the wire, 16 waiting, the rest refused at once (bounded queue, memory flat).
    const driver = g.drivers.get('rs485')!;
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => driver.write('a', [{ name: 'w', value: i }])));
    const busy = results.filter((r) => r.status === 'rejected' && /bus rs485 busy: 16 requests are already waiting/.test(String((r.reason as Error).message)));
    const done = results.filter((r) => r.status === 'fulfilled');
    console.log(`  40 writes at once: ${done.length} done, ${busy.length} refused as busy`);
    assert.is(done.length, 17);
    assert.is(busy.length, 23);
    assert.is(g.shadow.GetDeviceState('a'), 'Online', 'busy is not a device failure');
  });
});

test.run();
