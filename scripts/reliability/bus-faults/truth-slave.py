#!/usr/bin/python3
"""RTU slave whose every answer can be checked (bus-faults campaign, issue 15 item 3; Debian pymodbus 3.0.0).

Each unit u serves holding registers 0..9 that change on every read starting at address 0 (the
gateway's poll) and that check themselves:

  0     u
  1..2  seq (uint32, high word first): base + reads of unit u so far
  3..4  chk(u, seq) (uint32), see chk() below; scripts/reliability/bus-faults/truth.ts has the same
  5..9  (u * 1000 + 7 * a + seq) & 0xffff for address a

Registers 10..19 hold "foreign" words (0xA000 + 16 * u + a): what a second master reads; a gateway that
took such an answer for its own would report an id and a chk that do not match.

Every answered poll is printed as "S <unit> <seq>" (the truth log the checker compares the gateway's values
with). Prints READY once the port is open; exits on SIGTERM.

  truth-slave.py --rtu PATH --units 1,2 [--seq-base N] [--baud 9600]
"""
import argparse, asyncio, signal, sys, logging

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusSlaveContext, ModbusServerContext
from pymodbus.server.async_io import ModbusSerialServer
from pymodbus.transaction import ModbusRtuFramer

M32 = 0xFFFFFFFF


def chk(u, seq):
    return ((((seq ^ (u << 24)) * 2654435761) & M32) + 0x9E37) & M32


class TruthUnit(ModbusSlaveContext):
    def __init__(self, unit, base):
        block = ModbusSequentialDataBlock(0, [0] * 20)
        super().__init__(di=block, co=block, hr=block, ir=block, zero_mode=True)
        self.unit = unit
        self.seq = base

    def getValues(self, fc_as_hex, address, count=1):
        u = self.unit
        if fc_as_hex == 3 and address == 0:
            self.seq = (self.seq + 1) & M32
            print(f"S {u} {self.seq}", flush=True)
        s, c = self.seq, chk(u, self.seq)
        image = [u, s >> 16, s & 0xFFFF, c >> 16, c & 0xFFFF]
        image += [(u * 1000 + 7 * a + s) & 0xFFFF for a in range(5, 10)]
        image += [0xA000 + 16 * u + a for a in range(10, 20)]
        return image[address:address + count]


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtu", required=True)
    ap.add_argument("--units", default="1")
    ap.add_argument("--seq-base", type=int, default=0)
    ap.add_argument("--baud", type=int, default=9600)
    args = ap.parse_args()
    units = {int(u): TruthUnit(int(u), args.seq_base) for u in args.units.split(",")}
    context = ModbusServerContext(slaves=units, single=False)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    # ignore_missing_slaves: an unknown unit id gets no answer at all, as on a real RS-485 bus.
    server = ModbusSerialServer(context, ModbusRtuFramer, port=args.rtu, baudrate=args.baud, bytesize=8,
                                parity="N", stopbits=1, timeout=0.05, ignore_missing_slaves=True)
    await server.start()
    task = asyncio.create_task(server.serve_forever())
    print("READY", flush=True)
    await stop.wait()
    task.cancel()


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    asyncio.run(main())
