/**
 * Door load for the persona bench, in its own process (its work is not on the gateway's event loop): Modbus
 * TCP clients read through the front door for the window, each at `rateHz` (or as fast as it is answered),
 * waiting for its answer before the next request. The units given read the owner's bus on every request (max_age 1 ms: every read is a miss);
 * one of them is a dead unit, so its requests hold the bus until the timeout. Prints one JSON line at the end:
 * {"requests", "answers", "exceptions", "timeouts"} per unit.
 * Argument: {"port", "units": [u, ...], "clientsPerUnit", "rateHz", "windowS", "block": pdu}.
 */
import { RawModbusClient } from '../../test/helpers/modbus-tcp-client.js';

interface Args {
  port: number;
  units: number[];
  clientsPerUnit: number;
  rateHz: number;
  windowS: number;
  block: number[];
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const end = performance.now() + args.windowS * 1000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const counts: Record<string, { requests: number; answers: number; exceptions: number; timeouts: number }> = {};

async function hammer(unit: number): Promise<void> {
  const c = await RawModbusClient.open(args.port);
  const mine = (counts[unit] ??= { requests: 0, answers: 0, exceptions: 0, timeouts: 0 });
  try {
    for (let tid = 1; performance.now() < end; tid = (tid + 1) & 0xffff) {
      mine.requests++;
      const t0 = performance.now();
      try {
        const a = await c.request(tid, unit, args.block, 5000);
        if (a.pdu[0]! & 0x80) mine.exceptions++;
        else mine.answers++;
        await sleep(1000 / args.rateHz - (performance.now() - t0));
      } catch {
        // No answer in 5 s: a new connection, so a late answer cannot be taken for the next request's.
        mine.timeouts++;
        c.close();
        return hammer(unit);
      }
    }
  } finally {
    c.close();
  }
}

await Promise.all(args.units.flatMap((u) => Array.from({ length: args.clientsPerUnit }, () => hammer(u))));
process.stdout.write(`${JSON.stringify(counts)}\n`);
