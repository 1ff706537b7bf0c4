#!/usr/bin/python3
"""devices.py with live values, for the real-bus CPU bench: a real meter's readings move every second,
and only moving values make the gateway update its shadow, record history and publish on MQTT.

  live_devices.py --period 1.0 [devices.py arguments…]

Every measurement point of the images (a float32 or integer point with a unit of measure, not a setting
such as an address, a baud code, a threshold or a correction) is re-drawn every `period` seconds within
±1% of the image's value (integers by at least one raw step), straight in the slave's datastore.
Prints `LIVE {"points": N, "period": S}` on stderr before the slave starts; everything else is devices.py.
"""
import asyncio, json, os, random, struct, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "modbus-rig"))

import device_images  # noqa: E402
import devices  # noqa: E402

SETTINGS = ("address", "baud", "threshold", "correction", "alarm")
Image = device_images.Image
_f32, _integer = Image.f32, Image.integer


def _live(im):
    if not hasattr(im, "live"):
        im.live = []
    return im.live


def f32(self, table, address, name, value, unit=None, word_order="msw"):
    _f32(self, table, address, name, value, unit, word_order)
    if unit and not any(s in name for s in SETTINGS):
        _live(self).append(("f", table, address, value, 1, word_order))


def integer(self, table, address, name, value, fmt, weight=1, unit=None, word_order="msw", raw=None):
    _integer(self, table, address, name, value, fmt, weight, unit, word_order, raw)
    if unit and raw is None and name and not any(s in name for s in SETTINGS):
        _live(self).append((fmt, table, address, value, weight, word_order))


Image.f32, Image.integer = f32, integer

contexts = []
_init = devices.DeviceContext.__init__


def init(self, unit, image, log):
    _init(self, unit, image, log)
    contexts.append(self)


devices.DeviceContext.__init__ = init


def words(fmt, value, word_order):
    raw = struct.pack(">" + fmt, value)
    w = [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]
    return w if word_order == "msw" else w[::-1]


async def jitter(period):
    rnd = random.Random(16)
    while True:
        await asyncio.sleep(period)
        for ctx in contexts:
            for fmt, table, address, value, weight, word_order in getattr(ctx.image, "live", []):
                if fmt == "f":
                    new = value * (1 + rnd.uniform(-0.01, 0.01))
                else:
                    base = round(value * weight)
                    step = max(1, abs(base) // 100)
                    new = base + rnd.choice((-1, 1)) * rnd.randint(1, step)
                    if fmt.isupper():
                        new = max(0, new)
                ctx.store[table].setValues(address, words(fmt, new, word_order))


async def main():
    period = 1.0
    if "--period" in sys.argv:
        i = sys.argv.index("--period")
        period = float(sys.argv[i + 1])
        del sys.argv[i:i + 2]
    task = asyncio.create_task(devices.main())
    while not contexts and not task.done():
        await asyncio.sleep(0.01)
    n = sum(len(getattr(c.image, "live", [])) for c in contexts)
    print("LIVE " + json.dumps({"points": n, "period": period}), file=sys.stderr, flush=True)
    ticker = asyncio.create_task(jitter(period))
    try:
        await task
    finally:
        ticker.cancel()


if __name__ == "__main__":
    import logging
    logging.basicConfig(level=logging.CRITICAL)
    logging.getLogger("pymodbus").setLevel(logging.CRITICAL)
    asyncio.run(main())
