/**
 * A persona fed by a GPIO pulse counter, through the real gateway process: the config of
 * board/examples/gpio-s0-persona.json (an S0 meter on P1-11, 1000 imp/kWh, served as an Eastron SDM120 on
 * Modbus TCP) run by `src/main.ts run` against a fake GPIO sysfs in a private mount namespace
 * (scripts/gpio-fake/pulse-persona-in-namespace.ts). A Modbus TCP master reads the energy the pulses made;
 * the gateway is killed and started again after more than the device TTL and the total goes on.
 * Skipped with the reason when unshare is not permitted here.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runInNamespace, unshareProblem } from '../helpers/namespace.js';
import { needs } from '../helpers/peers.js';

const RUNNER = 'scripts/gpio-fake/pulse-persona-in-namespace.ts';
const TIMEOUT_MS = 45_000;
/** What an SDM120 float register holds for `kwh`. */
const f32 = (kwh: number): number => Math.fround(kwh);

test('docs/personas.md shows exactly the example config this test runs', () => {
  const doc = readFileSync('docs/personas.md', 'utf8');
  const section = doc.slice(doc.indexOf('### A persona fed by a GPIO pulse counter'));
  const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the section has a json block');
  const example = JSON.parse(readFileSync('board/examples/gpio-s0-persona.json', 'utf8'));
  delete example.models['s0-meter'].description;
  assert.equal(JSON.parse(block!), example);
});

const problem = unshareProblem();
const namespaceTest = needs(problem, 'gpio pulse persona test');

namespaceTest('an SDM120 persona fed by a GPIO pulse counter: a master reads the pulses as kWh; a power cut longer than the TTL keeps the total', async () => {
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'sg-gpio-pulse-'));
  try {
    const r = await runInNamespace(RUNNER, [workDir], TIMEOUT_MS, 'gpio pulse persona');
    console.log(`  pulse persona: power read ${JSON.stringify(r.first.power)} W after 10 pulses 400 ms apart`);
    // Before any pulse the rate is unknown: the persona is silent, never a made-up 0 W.
    assert.is(r.beforePulses, 'silent');
    // 10 pulses at 1000 imp/kWh = 0.01 kWh, as the SDM120's float registers (import and total energy).
    assert.equal(r.first.importEnergy, f32(0.01));
    assert.equal(r.first.totalEnergy, f32(0.01));
    assert.is(r.firstShadow, 0.01);
    // 1 Wh every 400 ms is 9 kW while pulsing; read about a second later it has fallen (the bound of one pulse
    // in the time since the last), but it is a real rate, never 0 or more than the pulses allow.
    assert.ok(typeof r.first.power === 'number' && r.first.power > 0 && r.first.power < 20_000, JSON.stringify(r.first));
    // SIGKILL, off for longer than the 2 s TTL, started again on the same data dir: the total is back.
    assert.is(r.restoredShadow, 0.01);
    assert.is(r.afterRestartBeforePulses, 'silent');
    // 5 more pulses continue it: 0.015 kWh, not 0.005.
    assert.equal(r.second.importEnergy, f32(0.015));
    assert.equal(r.second.totalEnergy, f32(0.015));
    assert.ok(typeof r.second.power === 'number' && r.second.power > 0 && r.second.power < 20_000, JSON.stringify(r.second));
    assert.equal(r.exit, { code: 0, signal: null });
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
});

test.run();
