/**
 * Pure parts of the gpio driver: header pin names, the config check (double-claimed pins, UART
 * conflicts), board files and detection, gpiochip selection by label, and the shipped models/example.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PointConfig } from '../../src/config/types.js';
import { loadConfigFile } from '../../src/config/load.js';
import { checkGpioConfig, gpioConfigChecker } from '../../src/drivers/gpio.js';
import { findBoard, loadBoards, matchBoardModel, resolveBoard, resolveConfigBoard } from '../../src/drivers/gpio/board.js';
import { chipMapping, listGpioChips, pickHeaderChip, resolveChipMapping } from '../../src/drivers/gpio/chip.js';
import { PI_40PIN_HEADER, parsePin } from '../../src/drivers/gpio/header.js';
import { resolved } from '../helpers/devices.js';

const gpio = (name: string, block: PointConfig['gpio'], extra: Partial<PointConfig> = {}): Partial<PointConfig> =>
  ({ name, type: 'int', access: block?.direction === 'out' ? 'RW' : 'R', gpio: block, ...extra });

const boards = loadBoards();
const tmpDirs: string[] = [];
function tmp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sg-gpio-'));
  tmpDirs.push(dir);
  return dir;
}
test.after(() => {
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
});

test('header pin names: P1-11 is BCM 17; supply pins, unknown and ambiguous names are refused', () => {
  assert.equal(parsePin('P1-11'), { bcm: 17 });
  assert.equal(parsePin('J8-40'), { bcm: 21 });
  assert.equal(parsePin('GPIO17'), { bcm: 17 });
  assert.equal(parsePin(26), { bcm: 26 });
  assert.match((parsePin('P1-2') as { error: string }).error, /"P1-2" is 5V, not a GPIO/);
  assert.match((parsePin('P1-41') as { error: string }).error, /unknown header pin "P1-41"/);
  assert.match((parsePin('17') as { error: string }).error, /ambiguous/);
  assert.match((parsePin(54) as { error: string }).error, /out of range/);
  assert.match((parsePin('pin eleven') as { error: string }).error, /unknown pin name/);
});

test('a pin claimed by two points of two devices is a config error naming both', () => {
  const relays = resolved('relays', [gpio('relay1', { pin: 17, direction: 'out' })], { bus: 'pins' });
  const door = resolved('door', [gpio('closed', { pin: 'P1-11', direction: 'in', edge: 'both' })], { bus: 'pins' });
  assert.equal(checkGpioConfig([relays, door]), [
    'devices.door.points.closed.gpio.pin: BCM 17 (P1-11) is already used by device relays point relay1',
  ]);
});

test('a pin claimed twice inside one device is a config error', () => {
  const dev = resolved('dev', [gpio('a', { pin: 5, direction: 'in' }), gpio('b', { pin: 'GPIO5', direction: 'in' })], { bus: 'pins' });
  const problems = checkGpioConfig([dev]);
  assert.is(problems.length, 1);
  assert.match(problems[0]!, /^devices\.dev\.points\.b\.gpio\.pin: BCM 5 \(P1-29\) is already used by device dev point a$/);
});

test('a pin used by a configured UART is a config error (primary UART without a board, uart3 on a Pi 4)', () => {
  const tx = resolved('dev', [gpio('tx', { pin: 14, direction: 'out' }), gpio('pir', { pin: 5, direction: 'in' })], { bus: 'pins' });
  assert.equal(checkGpioConfig([tx], undefined, { serialPorts: ['/dev/serial0'] }), [
    'devices.dev.points.tx.gpio.pin: BCM 14 (P1-8) is already used by the UART uart0 of bus port /dev/serial0',
  ]);
  assert.equal(checkGpioConfig([tx], undefined, { serialPorts: ['/dev/ttyUSB0'] }), [], 'a USB adapter claims no pins');
  const pi4 = findBoard(boards, 'rpi-4b')!;
  assert.equal(checkGpioConfig([tx], pi4, { serialPorts: ['/dev/ttyAMA3'] }), [
    'devices.dev.points.pir.gpio.pin: BCM 5 (P1-29) is already used by the UART uart3 of bus port /dev/ttyAMA3',
  ]);
});

test('unknown header pins and options that do not fit the direction are reported with their paths', () => {
  const dev = resolved('dev', [
    gpio('a', { pin: 'P1-99', direction: 'in' }),
    gpio('b', { pin: 6, direction: 'out', edge: 'both' }),
    gpio('c', { pin: 13, direction: 'in', initial: 1 }),
    gpio('d', { pin: 19, direction: 'in', debounce: 'soon' as unknown as number }),
    { name: 'e', type: 'int', access: 'R' },
  ], { bus: 'pins' });
  assert.equal(checkGpioConfig([dev]), [
    'devices.dev.points.a.gpio.pin: unknown header pin "P1-99" (the header has pins P1-1..P1-40)',
    'devices.dev.points.b.gpio.edge: edges apply to inputs only',
    'devices.dev.points.c.gpio.initial: initial applies to outputs only',
    'devices.dev.points.d.gpio.debounce: invalid duration "soon" (examples: 500ms, 30s, 5m, 1h30m, 14d)',
    'devices.dev.points.e.gpio: a point on a gpio bus needs a gpio block',
  ]);
});

test('a board narrows the BCM range to its chip', () => {
  const dev = resolved('dev', [gpio('a', { pin: 53, direction: 'in' })], { bus: 'pins' });
  assert.equal(checkGpioConfig([dev], findBoard(boards, 'rpi-4b')), []);
  const pi3 = { ...findBoard(boards, 'rpi-3b')!, gpiochip: { label: 'pinctrl-bcm2835', lines: 40 } };
  assert.match(checkGpioConfig([dev], pi3)[0]!, /pin 53 is out of range \(BCM 0\.\.39\)/);
});

test('board files: all six load, share the 40-pin header, and name distinct boards', () => {
  assert.equal(boards.map((b) => b.name).sort(), ['rpi-3b', 'rpi-3b-plus', 'rpi-4b', 'rpi-5', 'rpi-cm4', 'rpi-zero-2w']);
  for (const board of boards) {
    assert.equal(board.header, Object.fromEntries(Object.entries(PI_40PIN_HEADER)), board.name);
    for (const uart of board.uarts) assert.ok(uart.config_txt.length > 0, `${board.name} ${uart.name} says how to enable it`);
  }
  assert.is(findBoard(boards, 'rpi-5')!.gpiochip.label, 'pinctrl-rp1');
  assert.is(findBoard(boards, 'rpi-4b')!.gpiochip.label, 'pinctrl-bcm2711');
  assert.is(findBoard(boards, 'rpi-zero-2w')!.gpiochip.label, 'pinctrl-bcm2835');
});

test('a malformed board file is refused naming the file and every problem at its path (board.schema.json)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sg-boards-'));
  try {
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ name: 'Bad Board', title: 'x', model_match: [], gpiochip: { label: 'l' }, header: { 1: true }, uarts: [{ name: 'u' }], reserved: [] }));
    const err = (() => {
      try {
        loadBoards(dir);
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    })();
    assert.match(err, /bad\.json/);
    for (const problem of ['name: must match', 'model_match: must have at least 1', 'gpiochip.lines: is required', 'header[1]: must be integer or string', 'uarts[0].device: is required']) {
      assert.ok(err.includes(problem), `${problem} in: ${err}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('board detection from /proc/device-tree/model text; the longest prefix wins', async () => {
  const cases: [string, string][] = [
    ['Raspberry Pi 3 Model B Rev 1.2\0', 'rpi-3b'],
    ['Raspberry Pi 3 Model B Plus Rev 1.3\0', 'rpi-3b-plus'],
    ['Raspberry Pi 4 Model B Rev 1.5\0', 'rpi-4b'],
    ['Raspberry Pi 5 Model B Rev 1.0\0', 'rpi-5'],
    ['Raspberry Pi Zero 2 W Rev 1.0\0', 'rpi-zero-2w'],
    ['Raspberry Pi Compute Module 4 Rev 1.1\0', 'rpi-cm4'],
  ];
  for (const [model, name] of cases) assert.is(matchBoardModel(boards, model)?.name, name, model);
  assert.is(matchBoardModel(boards, 'Pine64 RockPro64'), undefined);

  const dir = tmp();
  writeFileSync(join(dir, 'model'), 'Raspberry Pi 5 Model B Rev 1.0\0');
  assert.equal((await resolveBoard({ boards, modelPath: join(dir, 'model') })).board?.name, 'rpi-5');
  assert.is((await resolveBoard({ boards, modelPath: join(dir, 'model') })).source, 'device-tree');
  // The config override wins over the device tree.
  const forced = await resolveBoard({ boards, modelPath: join(dir, 'model'), override: 'rpi-4b' });
  assert.equal([forced.board?.name, forced.source], ['rpi-4b', 'config']);
  assert.is((await resolveBoard({ boards, modelPath: join(dir, 'absent') })).source, 'none');
  await rejects(resolveBoard({ boards, override: 'rpi-9' }), /unknown board "rpi-9" \(known: .*rpi-5/);
  assert.equal(resolveConfigBoard('rpi-5').board?.name, 'rpi-5');
  assert.match(resolveConfigBoard('rpi-9').problems[0]!, /^gateway\.board: unknown board "rpi-9"/);
});

/** assert.throws for a promise: it must reject with a message matching `re`. */
async function rejects(p: Promise<unknown>, re: RegExp): Promise<void> {
  await p.then(() => assert.unreachable(`expected a rejection matching ${re}`), (e: Error) => assert.match(e.message, re));
}

function fakeChips(chips: { base: number; ngpio: number; label: string }[]): string {
  const root = tmp();
  for (const c of chips) {
    const dir = join(root, `gpiochip${c.base}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'base'), `${c.base}\n`);
    writeFileSync(join(dir, 'ngpio'), `${c.ngpio}\n`);
    writeFileSync(join(dir, 'label'), `${c.label}\n`);
  }
  return root;
}

test('gpiochip by label, never the lowest base: Pi 5 rp1 at 571 above brcmstb decoys; Pi 4 at 512', async () => {
  const pi5 = fakeChips([
    { base: 512, ngpio: 32, label: 'gpio-brcmstb@107d508500' },
    { base: 544, ngpio: 15, label: 'gpio-brcmstb@107d517c00' },
    { base: 571, ngpio: 54, label: 'pinctrl-rp1' },
  ]);
  const m5 = await resolveChipMapping({ sysfsRoot: pi5 });
  assert.equal([m5.chip.label, m5.toSysfs(17)], ['pinctrl-rp1', 588]);
  const pi4 = fakeChips([{ base: 504, ngpio: 8, label: 'raspberrypi-exp-gpio' }, { base: 512, ngpio: 58, label: 'pinctrl-bcm2711' }]);
  assert.is((await resolveChipMapping({ sysfsRoot: pi4 })).toSysfs(17), 529);
  // Older kernels: base 0.
  assert.is((await resolveChipMapping({ sysfsRoot: fakeChips([{ base: 0, ngpio: 54, label: 'pinctrl-bcm2835' }]) })).toSysfs(4), 4);
  // A bus `chip` (or the board's label) picks explicitly; a missing one names what was found.
  assert.is((await resolveChipMapping({ sysfsRoot: pi5, label: 'gpiochip544' })).chip.base, 544);
  await rejects(resolveChipMapping({ sysfsRoot: pi4, label: 'pinctrl-rp1' }), /no gpiochip labelled "pinctrl-rp1" \(found: gpiochip504="raspberrypi-exp-gpio" base 504, gpiochip512/);
  const expander = await listGpioChips(fakeChips([{ base: 0, ngpio: 8, label: 'some-expander' }]));
  assert.throws(() => pickHeaderChip(expander), /no Raspberry Pi header gpiochip/);
  assert.throws(() => chipMapping({ dir: 'gpiochip571', label: 'pinctrl-rp1', base: 571, ngpio: 54 }).toSysfs(54), /BCM 54 is not a line of pinctrl-rp1/);
});

test('shipped gpio models and the relay + door example pass the config loader and the gpio check', async () => {
  const example = 'board/examples/gpio-relay-door.json';
  const config = await loadConfigFile(example, { env: {}, checkers: [(c) => gpioConfigChecker(c)] });
  const door = config.devices.find((d) => d.id === 'door')!;
  assert.is(door.poll, 5000);
  assert.is(config.models['gpio-contact']!.points[0]!.gpio!.debounce, 20);
  // Every gpio model together with the contact, PIR and LED: no pin conflicts except between the
  // relay boards themselves (they are alternatives sharing the common pins).
  const names = ['gpio-relay-8ch', 'gpio-contact', 'gpio-pir', 'gpio-status-led'];
  const raw = JSON.parse(readFileSync(example, 'utf8'));
  raw.devices = names.map((model) => ({ id: model, model, bus: 'pins' }));
  const dir = tmp();
  writeFileSync(join(dir, 'all.json'), JSON.stringify(raw));
  const all = await loadConfigFile(join(dir, 'all.json'), { env: {}, checkers: [(c) => gpioConfigChecker(c)] });
  assert.is(all.devices.length, 4);
  // And the checker catches a conflict through the loader, with the config's device index.
  raw.devices.push({ id: 'relays2', model: 'gpio-relay-4ch', bus: 'pins' });
  writeFileSync(join(dir, 'clash.json'), JSON.stringify(raw));
  const err = await loadConfigFile(join(dir, 'clash.json'), { env: {}, checkers: [(c) => gpioConfigChecker(c)] }).catch((e) => e);
  assert.ok(Array.isArray(err.problems), String(err));
  assert.ok(err.problems.includes('devices[4].points.relay1.gpio.pin: BCM 5 (P1-29) is already used by device gpio-relay-8ch point relay1'), err.problems.join('\n'));
});

test.run();
