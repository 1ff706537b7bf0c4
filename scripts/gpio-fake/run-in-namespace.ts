/**
 * Drives the real gpio driver (onoff on sysfs) against the fake kernel, inside a private mount
 * namespace. Run as: unshare -m --propagation private node --import tsx scripts/gpio-fake/run-in-namespace.ts <pi4|pi5> [board]
 * Prints one JSON line of observations for test/drivers/gpio-sysfs.test.ts to assert. Never run it
 * outside a fresh mount namespace: it mounts a tmpfs over /sys/class (it refuses when it is not in one).
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { pino } from 'pino';
import type { PointConfig, ResolvedDevice } from '../../src/config/types.js';
import { createGpioDriver } from '../../src/drivers/gpio.js';
import type { RawValue } from '../../src/drivers/types.js';
import { stamp, waitedBetween } from '../../test/helpers/lateness.js';
import { GPIO, runThrowaway, waitFor, withFakeKernel } from './namespace.js';

const [scenario = 'pi5', board] = process.argv.slice(2);
const BASES: Record<string, number> = { pi4: 512, pi5: 571 };

function point(name: string, gpio: PointConfig['gpio'], extra: Partial<PointConfig> = {}): PointConfig {
  return { name, type: 'int', access: gpio?.direction === 'out' ? 'RW' : 'R', scale: 1, offset: 0, report: 'change', gpio, ...extra };
}

function device(id: string, poll: number, points: PointConfig[]): ResolvedDevice {
  return {
    config: { id, model: `test-${id}`, bus: 'pins', poll },
    model: { name: `test-${id}`, points },
    points: new Map(points.map((p) => [p.name, p])),
    ttl: 60_000,
  };
}

async function main(): Promise<Record<string, unknown>> {
  return withFakeKernel(scenario, 60_000, async () => {
    const partial: Record<string, unknown> = {};
    try {
      return await exercise(partial);
    } catch (e) {
      const debug = typeof partial.debug === 'function' ? partial.debug() : undefined;
      return { ...partial, debug, error: String((e as Error).stack ?? e) };
    }
  });
}

async function exercise(result: Record<string, unknown>): Promise<Record<string, unknown>> {
  const base = BASES[scenario]!;
  const gpioDir = (bcm: number): string => `${GPIO}/gpio${base + bcm}`;
  const readFile = (bcm: number, attr: string): string => readFileSync(`${gpioDir(bcm)}/${attr}`, 'utf8').trim();
  const exported = (): string[] => readdirSync(GPIO).filter((d) => /^gpio\d+$/.test(d)).sort();

  const devices = [
    device('relays', 1000, [
      point('relay1', { pin: 5, direction: 'out', active_low: true, initial: 0 }),
      point('relay2', { pin: 'P1-31', direction: 'out', active_low: true, initial: 1 }),
    ]),
    // Long device poll: a change arriving fast proves the edge path (here its polling fallback).
    device('door', 5000, [point('contact', { pin: 'P1-11', direction: 'in', edge: 'both', active_low: true, debounce: 20 })]),
    device('pir', 1000, [point('motion', { pin: 27, direction: 'in', edge: 'none' }, { poll: 100 })]),
  ];
  const data: { id: string; values: Record<string, RawValue>; at: number }[] = [];
  const failures: string[] = [];
  const logs: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const driver = createGpioDriver({ id: 'pins', driver: 'gpio', ...(board ? { board } : {}) }, devices, {
    sink: {
      data: (id, values) => data.push({ id, values, at: Date.now() }),
      failure: (id, e) => failures.push(`${id}: ${e.message}`),
    },
    clock: { now: () => Date.now(), mono: () => performance.now() },
    log,
    lastValue: () => null,
    lastWrite: () => null,
  });

  const t0 = Date.now();
  await driver.start();
  const startMs = Date.now() - t0;
  Object.assign(result, { scenario, board: board ?? null, startMs, exported: exported() });
  result.initial = {
    relay1: { value: readFile(5, 'value'), direction: readFile(5, 'direction') },
    relay2: { value: readFile(6, 'value'), direction: readFile(6, 'direction') },
  };
  result.firstData = data.map((d) => ({ id: d.id, values: d.values }));

  await driver.write('relays', [{ name: 'relay1', value: 1 }, { name: 'relay2', value: 0 }]);
  result.afterWrite = { relay1: readFile(5, 'value'), relay2: readFile(6, 'value') };
  result.readBack = await driver.read!('relays', ['relay1', 'relay2']);
  result.readonlyError = await driver.write('door', [{ name: 'contact', value: 1 }]).then(() => null, (e) => e.code);
  result.invalidError = await driver.write('relays', [{ name: 'relay1', value: 2 }]).then(() => null, (e) => e.code);

  // The fake line starts low: with active_low the contact reads closed (1). It opens: the pull-up
  // takes the line high and the point must drop to 0.
  const tEdge = Date.now();
  const edgeFrom = stamp();
  result.debug = () => ({ data, logs, failures });
  writeFileSync(`${gpioDir(17)}/value`, '1\n');
  const door = await waitFor('door change', () => data.find((d) => d.id === 'door' && d.at >= tEdge && d.values.contact === 0));
  result.doorLatencyMs = door.at - tEdge;
  // What this machine kept the driver's thread from a CPU meanwhile: the test widens its bound by it.
  result.doorWaitMs = waitedBetween(edgeFrom, stamp());
  const tPir = Date.now();
  const pirFrom = stamp();
  writeFileSync(`${gpioDir(27)}/value`, '1\n');
  const pir = await waitFor('pir poll', () => data.find((d) => d.id === 'pir' && d.at >= tPir && d.values.motion === 1));
  result.pirLatencyMs = pir.at - tPir;
  result.pirWaitMs = waitedBetween(pirFrom, stamp());
  result.readDoor = await driver.read!('door', ['contact']);

  result.warnings = logs.filter((l) => l.level === 40).map((l) => l.msg);
  result.failures = failures;
  result.stats = driver.stats!();
  await driver.stop();
  // The fake kernel (another process) takes the unexports from its FIFO when it gets a CPU: waited for, not
  // slept on (50 ms was not enough beside a busy job); a line never unexported still shows below.
  await waitFor('the fake kernel to finish unexporting', () => (exported().length === 0 ? true : undefined), 10_000).catch(() => undefined);
  result.afterStop = exported();
  result.kernelLog = readFileSync('/sys/class/.fake-kernel.log', 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  return result;
}

runThrowaway(main, 60_000, () => ({}));
