"""RTU master for the persona bench: polls one read every `interval` seconds for `duration` seconds and
prints one JSON summary line. Frames and CRC from pymodbus' own CRC; the timing is taken here, at the
master: request end = the request written and drained, reply start = the first byte of the answer read.

usage: persona_master.py PORT UNIT FC ADDRESS COUNT INTERVAL_S DURATION_S [TIMEOUT_S [trace]]
With `trace`, every answer is also printed as {"t": reply start (time.monotonic(), CLOCK_MONOTONIC), "regs": [...]}.
"""
import json
import struct
import sys
import time

import serial
from pymodbus.utilities import computeCRC


def main():
    port, unit, fc, address, count = sys.argv[1], *map(int, sys.argv[2:6])
    interval, duration = float(sys.argv[6]), float(sys.argv[7])
    timeout = float(sys.argv[8]) if len(sys.argv) > 8 else 0.5
    trace = len(sys.argv) > 9 and sys.argv[9] == "trace"
    body = struct.pack(">BBHH", unit, fc, address, count)
    request = body + struct.pack(">H", computeCRC(body))   # pymodbus returns the CRC in wire byte order for ">H"
    answer_len = 5 + 2 * count
    ser = serial.Serial(port, 9600, timeout=timeout)
    replies, timeouts, crc_errors, exceptions, wrong = [], 0, 0, 0, 0
    start = time.monotonic()
    k = 0
    while True:
        due = start + k * interval
        if due - start >= duration:
            break
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        k += 1
        ser.reset_input_buffer()
        ser.write(request)
        ser.flush()
        sent = time.monotonic()
        first = ser.read(1)
        if not first:
            timeouts += 1
            continue
        got = time.monotonic()
        frame = first + ser.read(2)   # unit, function code: an exception answer is 5 bytes long
        if len(frame) == 3 and frame[1] & 0x80:
            frame += ser.read(2)
            need = 5
        else:
            frame += ser.read(answer_len - 3)
            need = answer_len
        if len(frame) < need:
            timeouts += 1
            continue
        if struct.unpack(">H", frame[need - 2:need])[0] != computeCRC(frame[:need - 2]):
            crc_errors += 1
            continue
        if frame[1] & 0x80:
            exceptions += 1
            continue
        if frame[0] != unit or frame[1] != fc:
            wrong += 1
            continue
        replies.append((got - sent) * 1000)
        if trace:
            print(json.dumps({"t": got, "regs": list(struct.unpack(">%dH" % count, frame[3:3 + 2 * count]))}))
    ser.close()
    replies.sort()
    q = lambda p: replies[min(len(replies) - 1, int(p * len(replies)))] if replies else None
    print(json.dumps({"requests": k, "answers": len(replies), "timeouts": timeouts, "crc_errors": crc_errors,
                      "exceptions": exceptions, "wrong": wrong, "p50_ms": q(0.5), "p99_ms": q(0.99),
                      "min_ms": replies[0] if replies else None, "max_ms": replies[-1] if replies else None}))


if __name__ == "__main__":
    main()
