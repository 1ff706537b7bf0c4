/**
 * The process that rs485-de-in-namespace.ts runs under strace: one modbus-rtu bus with `rs485: { mode: "gpio",
 * de_pin: 17 }` (DE claimed through the real onoff port on the namespace's fake sysfs) polling unit 1 of the
 * pymodbus slave at `tty` until it has read `polls` points, then stopped. Prints one JSON line and exits; gives
 * up (exit 3) after 15 s whatever happens, so the strace around it always ends.
 * Run as: node --import tsx scripts/gpio-fake/rs485-de-bus.ts <tty> <polls>, inside the runner's namespace only.
 */
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import { context, device, FakeSink, point, rtuBus } from '../../test/drivers/modbus-rig.js';
import { waitFor } from './namespace.js';

const [tty, pollsArg = '8'] = process.argv.slice(2);
const DE_BCM = 17;

async function main(): Promise<Record<string, unknown>> {
  if (!tty) throw new Error('usage: rs485-de-bus.ts <tty> <polls>');
  const polls = Number(pollsArg);
  const sink = new FakeSink();
  const bus = rtuBus(tty, { rs485: { mode: 'gpio', de_pin: DE_BCM } });
  const driver = createModbusRtuDriverWith(bus, [device('meter', 1, [point('s16', { table: 'holding', address: 0, data_type: 'int16' })], 100)], context(sink));
  await driver.start();
  try {
    await waitFor(`${polls} polls`, () => (sink.dataOf('meter').length >= polls ? true : undefined), 10_000, 20);
  } finally {
    await driver.stop();
  }
  return {
    baud: bus.baud_rate,
    polls: sink.dataOf('meter').length,
    latest: sink.latest('meter'),
    failures: sink.failuresOf('meter').map((e) => e.error!.message),
  };
}

const deadline = setTimeout(() => {
  console.log(JSON.stringify({ error: 'bus process timed out' }));
  process.exit(3);
}, 15_000);
main().then(
  (result) => {
    console.log(JSON.stringify(result));
    clearTimeout(deadline);
    process.exit(0);
  },
  (e: unknown) => {
    console.log(JSON.stringify({ error: String((e as Error)?.stack ?? e) }));
    process.exit(1);
  },
);
