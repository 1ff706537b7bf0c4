#!/usr/bin/env python3
"""An independent Modbus RTU master (pymodbus) for persona tests: it runs the steps given as JSON on
stdin, one per line, and prints one JSON line per result, so a test drives it like a consumer would.

Steps:
  {"op": "read", "fc": 3|4, "unit": U, "address": A, "count": N}
  {"op": "write", "unit": U, "address": A, "values": [..]}       (FC16; FC6 with one value and "fc": 6)
  {"op": "poll", "fc": 4, "unit": U, "address": A, "count": N, "interval": 0.2, "duration": 10}
A result: {"ok": true, "regs": [...]} / {"ok": false, "error": "timeout" | "exception N" | text}.
A poll prints one result per request with "t" (monotonic seconds), then {"summary": {...}}.
"""
import argparse
import json
import sys
import time

from pymodbus.client import ModbusSerialClient
from pymodbus.exceptions import ModbusIOException
from pymodbus.pdu import ExceptionResponse


def run(client, step):
    try:
        if step["op"] == "read":
            fn = client.read_holding_registers if step["fc"] == 3 else client.read_input_registers
            r = fn(step["address"], step["count"], slave=step["unit"])
        elif step.get("fc") == 6:
            r = client.write_register(step["address"], step["values"][0], slave=step["unit"])
        else:
            r = client.write_registers(step["address"], step["values"], slave=step["unit"])
    except ModbusIOException as e:
        return {"ok": False, "error": "timeout" if "No Response" in str(e) or "no response" in str(e).lower() else str(e)}
    except Exception as e:  # noqa: BLE001 - reported to the test, which decides
        return {"ok": False, "error": str(e)}
    if isinstance(r, ExceptionResponse):
        return {"ok": False, "error": "exception %d" % r.exception_code}
    if isinstance(r, ModbusIOException) or r is None:
        return {"ok": False, "error": "timeout", "detail": str(r)}
    if hasattr(r, "registers"):
        return {"ok": True, "regs": list(r.registers)}
    return {"ok": True}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", required=True)
    ap.add_argument("--baud", type=int, default=9600)
    ap.add_argument("--timeout", type=float, default=1.0)
    a = ap.parse_args()
    client = ModbusSerialClient(port=a.port, baudrate=a.baud, timeout=a.timeout, retries=0, retry_on_empty=False)
    if not client.connect():
        print(json.dumps({"fatal": "cannot open " + a.port}), flush=True)
        return 1
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        step = json.loads(line)
        if step["op"] != "poll":
            print(json.dumps(run(client, dict(step, op="read" if step["op"] == "read" else "write"))), flush=True)
            continue
        summary = {"ok": 0, "timeouts": 0, "errors": 0}
        end = time.monotonic() + step["duration"]
        next_at = time.monotonic()
        while time.monotonic() < end:
            r = run(client, dict(step, op="read"))
            r["t"] = time.monotonic()
            summary["ok" if r["ok"] else "timeouts" if r["error"] == "timeout" else "errors"] += 1
            print(json.dumps(r), flush=True)
            next_at += step["interval"]
            time.sleep(max(0.0, next_at - time.monotonic()))
        print(json.dumps({"summary": summary}), flush=True)
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
