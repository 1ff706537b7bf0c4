#!/usr/bin/python3
"""Independent Modbus slave serving the register images of REAL devices (Debian pymodbus 3.0.0).

Each unit id answers as one device of device_images.py: its registers as its manufacturer document (or
the open-source driver cited) lays them out, with its documented request limit. Like slave.py, but the
images are devices, not test patterns.

  devices.py --rtu PATH --device sdm630:1,em111:2 [--tcp PORT] [--baud 9600 --parity N|E|O --stop-bits 1|2] [--log]
  devices.py --describe sdm630:1,em111:2      # the images and their expected points, as JSON
  devices.py --list                           # the image names

What a real device does, and this slave does too:
- a read (FC01..FC04) or write (FC15/FC16) of more registers/bits than the device's documented limit
  answers exception 3 (illegal data value);
- an address the device does not have answers exception 2 (illegal data address): images are sparse
  where the real device has holes (ABB ACS355 parameters);
- a function the device does not support answers exception 1 (DDS238-2: no FC06; iEM3155: FC03/FC16 only);
- an unknown unit id gets no answer at all (RS-485).

Every refusal is printed on stderr as `REFUSED {json}` (unit, fc, address, count, code, why); with
--log every request is printed as `REQ {json}`. SIGUSR2 prints `COUNTS {json}` (per unit: requests,
over_limit, bad_address, bad_function, odd); so does SIGTERM before exiting.
Prints READY on stdout once every server is listening.
"""
import argparse, asyncio, json, logging, os, signal, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pymodbus.datastore import ModbusSparseDataBlock, ModbusSlaveContext, ModbusServerContext  # noqa: E402
from pymodbus.server.async_io import ModbusSerialServer, ModbusTcpServer  # noqa: E402
from pymodbus.transaction import ModbusRtuFramer, ModbusSocketFramer  # noqa: E402
from pymodbus.pdu import ExceptionResponse  # noqa: E402
from pymodbus import bit_read_message as brm, bit_write_message as bwm  # noqa: E402
from pymodbus import register_read_message as rrm, register_write_message as rwm  # noqa: E402

from device_images import IMAGES, IR, HR, CO, DI  # noqa: E402

ILLEGAL_FUNCTION, ILLEGAL_ADDRESS, ILLEGAL_VALUE = 1, 2, 3


class DeviceContext(ModbusSlaveContext):
    """One unit: the image's tables plus its rules and counters."""

    def __init__(self, unit, image, log):
        blocks = {t: ModbusSparseDataBlock(dict(image.tables[t]), mutable=False) for t in (IR, HR, CO, DI)}
        if image.same_03_04:   # FC03 and FC04 read the same registers
            blocks[HR] = blocks[IR]
        super().__init__(di=blocks[DI], co=blocks[CO], hr=blocks[HR], ir=blocks[IR], zero_mode=True)
        self.unit = unit
        self.image = image
        self.log = log
        self.counts = {"requests": 0, "over_limit": 0, "bad_address": 0, "bad_function": 0, "odd": 0}

    def report(self, fc, address, count, code=None, why=None):
        self.counts["requests"] += 1
        event = {"unit": self.unit, "device": self.image.key, "fc": fc, "address": address, "count": count}
        if code is not None:
            event.update(code=code, why=why)
            print("REFUSED " + json.dumps(event), file=sys.stderr, flush=True)
        elif self.log:
            print("REQ " + json.dumps(event), file=sys.stderr, flush=True)


# function code -> (kind, limit attribute on the image)
GUARDED = {
    brm.ReadCoilsRequest: ("bits", "max_bits"),
    brm.ReadDiscreteInputsRequest: ("bits", "max_bits"),
    rrm.ReadHoldingRegistersRequest: ("registers", "max_registers"),
    rrm.ReadInputRegistersRequest: ("registers", "max_registers"),
    rwm.WriteSingleRegisterRequest: ("registers", None),
    rwm.WriteMultipleRegistersRequest: ("registers", "max_write_registers"),
    bwm.WriteSingleCoilRequest: ("bits", None),
    bwm.WriteMultipleCoilsRequest: ("bits", "max_write_bits"),
}


def guard(cls, limit_attr):
    """Wraps a request's execute: the device's own rules come before pymodbus' generic checks."""
    original = cls.execute

    def execute(self, context):
        if not isinstance(context, DeviceContext):
            return original(self, context)
        fc = self.function_code
        address = getattr(self, "address", 0)
        count = getattr(self, "count", None)
        if count is None:
            values = getattr(self, "values", None)
            count = len(values) if isinstance(values, (list, tuple)) else 1
        image = context.image
        refusal = None
        if fc in image.refused_functions:
            code, why = image.refused_functions[fc]
            refusal = (code, why, "bad_function")
        elif limit_attr and count > getattr(image, limit_attr):
            refusal = (ILLEGAL_VALUE, f"{count} > {limit_attr} {getattr(image, limit_attr)}", "over_limit")
        elif image.even_only and fc in (3, 4) and (address % 2 or count % 2):
            refusal = (ILLEGAL_ADDRESS, "odd start address or count", "odd")
        if refusal:
            code, why, counter = refusal
            context.counts[counter] += 1
            context.report(fc, address, count, code, why)
            return self.doException(code)
        response = original(self, context)
        if isinstance(response, ExceptionResponse):
            code = response.exception_code
            if code == ILLEGAL_ADDRESS:
                context.counts["bad_address"] += 1
            context.report(fc, address, count, code, "no such address" if code == ILLEGAL_ADDRESS else "refused")
        else:
            context.report(fc, address, count)
        return response

    cls.execute = execute


for request_class, (_, attr) in GUARDED.items():
    guard(request_class, attr)


def tolerate_pty_parity():
    """pyserial applies the settings again on every timeout change, and serial_asyncio sets timeout 0 right
    after opening. On a pty the kernel has cleared PARENB of the first apply, so the second one differs and
    sets it again together with INPCK, which Linux refuses (EINVAL) for odd or even parity: the server then
    never opens its port. The first apply stands (PARODD is kept, line_relay.py reads it), so a pty's refusal
    of the second is ignored."""
    import errno, termios
    import serial.serialposix as posix
    original = posix.Serial._reconfigure_port

    def reconfigure(self, force_update=False):
        try:
            original(self, force_update)
        except termios.error as exc:
            if exc.args[0] != errno.EINVAL or not os.path.realpath(self.portstr).startswith("/dev/pts/"):
                raise

    posix.Serial._reconfigure_port = reconfigure


def parse_devices(spec):
    """`sdm630:1,em111:2` -> [(unit, image)]."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, unit = item.rpartition(":")
        if not name or name not in IMAGES:
            raise SystemExit(f"unknown device image {item!r}; known: {', '.join(IMAGES)}")
        u = int(unit)
        if not 1 <= u <= 247:
            raise SystemExit(f"unit id {u} out of 1..247")
        out.append((u, IMAGES[name](u)))
    units = [u for u, _ in out]
    if len(set(units)) != len(units):
        raise SystemExit("two devices on one unit id")
    return out


async def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtu")
    ap.add_argument("--tcp", type=int)
    ap.add_argument("--device", default="")
    ap.add_argument("--baud", type=int, default=9600)
    ap.add_argument("--parity", default="N", choices=["N", "E", "O"])
    ap.add_argument("--stop-bits", type=int, default=1, choices=[1, 2])
    ap.add_argument("--log", action="store_true", help="print every request (REQ lines) on stderr")
    ap.add_argument("--describe", metavar="SPEC", help="print the images of SPEC with their expected points as JSON")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(IMAGES))
        return
    if args.describe is not None:
        spec = args.describe or ",".join(f"{k}:{i + 1}" for i, k in enumerate(IMAGES))
        print(json.dumps([dict(im.describe(), unit=u) for u, im in parse_devices(spec)], indent=1))
        return
    devices = parse_devices(args.device)
    if not devices:
        raise SystemExit("no --device given")
    slaves = {u: DeviceContext(u, im, args.log) for u, im in devices}
    context = ModbusServerContext(slaves=slaves, single=False)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def counts():
        print("COUNTS " + json.dumps({str(u): dict(s.counts, device=s.image.key) for u, s in slaves.items()}),
              file=sys.stderr, flush=True)

    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGUSR2, counts)

    tasks = []
    if args.rtu:
        if args.parity != "N":
            tolerate_pty_parity()
        # ignore_missing_slaves: an unknown unit id gets no answer at all, like on a real RS-485 bus.
        rtu = ModbusSerialServer(context, ModbusRtuFramer, port=args.rtu, baudrate=args.baud, bytesize=8,
                                 parity=args.parity, stopbits=args.stop_bits, timeout=0.05, ignore_missing_slaves=True)
        await rtu.start()
        tasks.append(asyncio.create_task(rtu.serve_forever()))
    if args.tcp:
        tcp = ModbusTcpServer(context, ModbusSocketFramer, address=("127.0.0.1", args.tcp),
                              allow_reuse_address=True, ignore_missing_slaves=True)
        tasks.append(asyncio.create_task(tcp.serve_forever()))
        await asyncio.wait_for(tcp.serving, 5)
    if not tasks:
        raise SystemExit("give --rtu PATH and/or --tcp PORT")
    print("READY", flush=True)
    await stop.wait()
    counts()
    for t in tasks:
        t.cancel()


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    logging.getLogger("pymodbus").setLevel(logging.CRITICAL)   # exceptions we answer on purpose are no errors
    asyncio.run(main())
