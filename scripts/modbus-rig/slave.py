#!/usr/bin/python3
"""Independent Modbus slave for shadowgate's tests (Debian pymodbus 3.0.0).

Serves one or more unit ids from a known register image on an RTU serial port (a socat pty) and/or
a Modbus TCP port. All servers share one datastore, so a value written over RTU can be checked
through TCP by an independent client (mbpoll).

  slave.py [--rtu PATH] [--tcp PORT] [--units 1,2] [--baud 9600] [--count FILE] [--write-delay S]

--count FILE: after every request, FILE holds {"unit:fc:address:count": requests} as JSON (requests seen by the
slave, RTU and TCP together), so a test counts the frames that reached the device.
--write-delay S: writes (FC 5, 6, 15, 16) to address 150 and up are answered S seconds late (a slow EEPROM write).

Unit 5 has a sparse map (holes answer exception 2); unit 6 has no holding register 0. SIGUSR1 toggles unit 2 between answering and silent (a slave that dies and comes back).
Prints READY on stdout once every server is listening. Exits on SIGTERM.
"""
import argparse, asyncio, json, os, signal, struct, sys, time, logging

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusSparseDataBlock, ModbusSlaveContext, ModbusServerContext
from pymodbus.server.async_io import ModbusSerialServer, ModbusTcpServer
from pymodbus.transaction import ModbusRtuFramer, ModbusSocketFramer

COUNTS = {}
OPTIONS = {"count": None, "write_delay": 0.0}


class CountingContext(ModbusSlaveContext):
    """pymodbus calls validate() once per request before it touches the data: the place to count frames."""

    def __init__(self, unit, *args, serial=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.unit = unit
        # An Eastron meter's identity (outside the dense tables below): serial number at holding FC00h (uint32),
        # meter code at FC02h (0070h, an SDM630's) and software version at FC03h (2 bytes)
        self.serial = words("I", serial) + [0x0070, 0x0102] if serial is not None else None

    def _serial(self, fc_as_hex, address, count):
        return self.serial is not None and fc_as_hex == 3 and SERIAL_AT <= address and address + count <= SERIAL_AT + len(self.serial)

    def validate(self, fc_as_hex, address, count=1):
        if OPTIONS["count"]:
            key = f"{self.unit}:{fc_as_hex}:{address}:{count}"
            COUNTS[key] = COUNTS.get(key, 0) + 1
            tmp = OPTIONS["count"] + ".tmp"
            with open(tmp, "w") as f:
                json.dump(COUNTS, f)
            os.replace(tmp, OPTIONS["count"])
        if fc_as_hex in (5, 6, 15, 16) and address >= 150 and OPTIONS["write_delay"] > 0:
            time.sleep(OPTIONS["write_delay"])
        if self._serial(fc_as_hex, address, count):
            return True
        return super().validate(fc_as_hex, address, count)

    def getValues(self, fc_as_hex, address, count=1):
        if self._serial(fc_as_hex, address, count):
            return self.serial[address - SERIAL_AT:address - SERIAL_AT + count]
        return super().getValues(fc_as_hex, address, count)


SIZE = 200  # registers/bits per table; reading past it answers exception 2 (illegal data address)
SERIAL_AT = 0xFC00


def words(fmt, value):
    raw = struct.pack(">" + fmt, value)
    return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


def sparse():
    """Unit 5: a device with holes in its map (only 0..3 and 10..13 exist), like many meters."""
    hr = ModbusSparseDataBlock({0: words("f", 1.5) + words("f", 2.5), 10: words("f", 3.5) + words("f", 4.5)})
    return CountingContext(5, di=ModbusSparseDataBlock({0: [0]}), co=ModbusSparseDataBlock({0: [0]}), hr=hr,
                              ir=ModbusSparseDataBlock({0: [0]}), zero_mode=True)


def no_holding_zero():
    """Unit 6: a sensor with no holding register 0 (an XY-MD02: readings in input 1..2, settings from holding
    0x0101), so a scan's probe of holding 0 gets exception 2 (illegal data address), which proves it is there."""
    return CountingContext(6, di=ModbusSparseDataBlock({0: [0]}), co=ModbusSparseDataBlock({0: [0]}),
                              hr=ModbusSparseDataBlock({0x101: [1, 96]}), ir=ModbusSparseDataBlock({1: [215, 456]}), zero_mode=True)


def image(unit):
    """Known register image (the tests assert these decoded values)."""
    if unit == 5:
        return sparse()
    if unit == 6:
        return no_holding_zero()
    hr = [0] * SIZE
    def put(addr, ws):
        hr[addr:addr + len(ws)] = ws
    put(0, words("h", -1))
    put(1, words("H", 50000))
    put(2, words("i", -123456))
    put(4, list(reversed(words("I", 3000000000))))          # word order little
    put(6, words("f", 230.5))
    put(8, list(reversed(words("f", 230.5))))               # word order little
    put(10, words("d", -1234.5678))
    put(14, words("q", 1234567890123))
    put(18, [int.from_bytes(b"SG-RIG01"[i:i + 2], "big") for i in range(0, 8, 2)])
    put(22, [0b1010000000000101])
    put(23, [0x3412])                                        # 0x1234 with byte order little
    put(24, words("H", unit))                                # tells units apart
    put(100, words("f", 49.95))
    if unit == 2:
        # A Waveshare relay board keeps its software version at 0x8000.
        hr += [0] * (0x8001 - SIZE)
        hr[0x8000] = 100
    ir = [0] * 400  # Eastron SDM120-like: 0 voltage, 6 current, 12 power, 70 frequency, 342 total energy
    ir[0:2] = words("f", 230.5 + unit)
    ir[6:8] = words("f", 5.25)
    ir[12:14] = words("f", 1210.0)
    ir[70:72] = words("f", 50.0)
    ir[342:344] = words("f", 1234.5)
    co = [i % 3 == 0 for i in range(SIZE)]
    di = [i % 2 == 1 for i in range(SIZE)]
    # zero_mode=True: address 0 on the wire is index 0 (the default shifts everything by one).
    return CountingContext(unit, di=ModbusSequentialDataBlock(0, di), co=ModbusSequentialDataBlock(0, co),
                              hr=ModbusSequentialDataBlock(0, hr), ir=ModbusSequentialDataBlock(0, ir),
                              zero_mode=True, serial=20000000 + unit)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtu")
    ap.add_argument("--tcp", type=int)
    ap.add_argument("--units", default="1")
    ap.add_argument("--baud", type=int, default=9600)
    ap.add_argument("--count")
    ap.add_argument("--write-delay", type=float, default=0.0)
    args = ap.parse_args()
    OPTIONS["count"] = args.count
    OPTIONS["write_delay"] = args.write_delay
    units = [int(u) for u in args.units.split(",")]
    slaves = {u: image(u) for u in units}
    context = ModbusServerContext(slaves=dict(slaves), single=False)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    def toggle():
        if 2 in context:
            del context[2]
        elif 2 in slaves:
            context[2] = slaves[2]
    loop.add_signal_handler(signal.SIGUSR1, toggle)

    tasks = []
    if args.rtu:
        # ignore_missing_slaves: an unknown unit id gets no answer at all, like on a real RS-485 bus.
        rtu = ModbusSerialServer(context, ModbusRtuFramer, port=args.rtu, baudrate=args.baud, bytesize=8,
                                 parity="N", stopbits=1, timeout=0.05, ignore_missing_slaves=True)
        await rtu.start()
        tasks.append(asyncio.create_task(rtu.serve_forever()))
    if args.tcp:
        tcp = ModbusTcpServer(context, ModbusSocketFramer, address=("127.0.0.1", args.tcp),
                              allow_reuse_address=True, ignore_missing_slaves=True)
        tasks.append(asyncio.create_task(tcp.serve_forever()))
        await asyncio.wait_for(tcp.serving, 5)
    print("READY", flush=True)
    await stop.wait()
    for t in tasks:
        t.cancel()


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    asyncio.run(main())
