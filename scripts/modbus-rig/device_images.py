"""Register images of real devices, written by hand from their sources (NOT from board/models).

Each image is what one real device answers: its register tables (addresses as the source prints them,
converted to wire addresses here: Eastron 30001 = input 0, "0x0156" = 342, Schneider register 3000 =
wire 2999, ABB 40102 = holding 101), its encodings per the source, its documented request limit, and
the engineering value + unit of every point we put in (what the test expects the gateway to show).

Values are distinctive and realistic; where the source prints an example frame, that example is used.
Where the source says nothing (which unlisted addresses a device answers, a request limit), the choice
is named in the image's `notes`.

Used by devices.py (the slave) and, through `devices.py --describe`, by the test that compares what the
gateway shows with these expectations.
"""
import struct

IR, HR, CO, DI = "i", "h", "c", "d"   # pymodbus store keys: input, holding, coil, discrete

MODBUS_MAX_REGISTERS = 125   # Modbus application protocol V1.1b3, FC03/FC04 quantity 1..125
MODBUS_MAX_BITS = 2000       # FC01/FC02 quantity 1..2000
MODBUS_MAX_WRITE_REGISTERS = 123
MODBUS_MAX_WRITE_BITS = 1968


def _words(fmt, value):
    raw = struct.pack(">" + fmt, value)
    return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


class Image:
    """One device: sparse tables {address: word/bit}, limits, and the expected points."""

    def __init__(self, key, model, source, max_registers=None, max_bits=None, limit_source=None):
        self.key = key
        self.model = model
        self.source = source
        self.tables = {IR: {}, HR: {}, CO: {}, DI: {}}
        self.max_registers = max_registers or MODBUS_MAX_REGISTERS
        self.max_bits = max_bits or MODBUS_MAX_BITS
        self.max_write_registers = MODBUS_MAX_WRITE_REGISTERS
        self.max_write_bits = MODBUS_MAX_WRITE_BITS
        self.limit_source = limit_source or "no device limit documented: the Modbus protocol maximum"
        self.refused_functions = {}   # function code -> (exception code, why)
        self.even_only = False        # requests must start at an even address, for an even count
        self.same_03_04 = False       # FC03 and FC04 read the same registers
        self.points = []              # [{name, value, unit (text, list of accepted spellings, or None), reason?, tolerance?}]
        self.notes = []
        # requests the device refuses although a correct master sends them (SunSpec discovery probing a
        # search address the device does not use): [(fc, address, count)]
        self.expected_refusals = []

    # --- raw tables ---------------------------------------------------------------------------
    def dense(self, table, first, last, fill=0):
        """Every address first..last exists (unlisted ones answer `fill`)."""
        for a in range(first, last + 1):
            self.tables[table].setdefault(a, fill)

    def put(self, table, address, words):
        for i, w in enumerate(words):
            self.tables[table][address + i] = w & 0xFFFF if table in (IR, HR) else bool(w)

    def expect(self, name, value, unit=None, reason=None, tolerance=None):
        p = {"name": name, "value": value, "unit": unit}
        if reason is not None:
            p["reason"] = reason
        if tolerance is not None:
            p["tolerance"] = tolerance
        self.points.append(p)

    # --- typed points: `value` is the engineering value, `weight` the source's raw-per-unit -----
    def f32(self, table, address, name, value, unit=None, word_order="msw"):
        w = _words("f", value)
        self.put(table, address, w if word_order == "msw" else w[::-1])
        # float32 carries ~7 significant digits
        self.expect(name, value, unit, tolerance=max(1e-6, abs(value) * 2e-7))

    def integer(self, table, address, name, value, fmt, weight=1, unit=None, word_order="msw", raw=None):
        r = round(value * weight) if raw is None else raw
        w = _words(fmt, r)
        self.put(table, address, w if word_order == "msw" else w[::-1])
        if name:
            self.expect(name, value, unit)

    def i16(self, table, address, name, value, weight=1, unit=None):
        self.integer(table, address, name, value, "h", weight, unit)

    def u16(self, table, address, name, value, weight=1, unit=None):
        self.integer(table, address, name, value, "H", weight, unit)

    def i32(self, table, address, name, value, weight=1, unit=None, word_order="msw"):
        self.integer(table, address, name, value, "i", weight, unit, word_order)

    def u32(self, table, address, name, value, weight=1, unit=None, word_order="msw"):
        self.integer(table, address, name, value, "I", weight, unit, word_order)

    def i64(self, table, address, name, value, weight=1, unit=None, word_order="msw"):
        self.integer(table, address, name, value, "q", weight, unit, word_order)

    def text(self, table, address, name, value, length):
        """ASCII, two characters per register (first in the high byte), NUL-padded to `length` registers."""
        raw = value.encode("ascii").ljust(length * 2, b"\0")
        self.put(table, address, [int.from_bytes(raw[i:i + 2], "big") for i in range(0, length * 2, 2)])
        self.expect(name, value)

    def bit(self, table, address, name, on):
        self.put(table, address, [1 if on else 0])
        self.expect(name, 1 if on else 0)

    def describe(self):
        return {
            "key": self.key, "model": self.model, "source": self.source, "notes": self.notes,
            "limits": {"max_registers": self.max_registers, "max_bits": self.max_bits,
                       "max_write_registers": self.max_write_registers, "source": self.limit_source},
            "refused_functions": {str(k): v[1] for k, v in self.refused_functions.items()},
            "even_only": self.even_only,
            "expected_refusals": [list(r) for r in self.expected_refusals],
            "points": self.points,
        }


# =============================================================================================
# Eastron: IEEE 754 float32, most significant register first, input registers (FC04).
# =============================================================================================

def sdm120(unit):
    im = Image("sdm120", "eastron-sdm120",
               "Eastron SDM120-Modbus Protocol Implementation V2.4 (30001 Volts … 30345 kvarh; example "
               "43 66 33 34 = 230.2 V; requests start at an even address for an even count; holding 40029 "
               "baud 0 = 2400 default)")
    im.even_only = True
    im.notes.append("unlisted input registers inside 30001..30346 answer 0 (not documented either way)")
    im.dense(IR, 0x0000, 0x0159)
    im.put(IR, 0x0000, [0x4366, 0x3334]); im.expect("voltage", 230.2, "V", tolerance=1e-4)  # the document's own frame
    im.f32(IR, 0x0006, "current", 4.87, "A")
    im.f32(IR, 0x000C, "active_power", 1093.5, "W")
    im.f32(IR, 0x0012, "apparent_power", 1121.1, "VA")
    im.f32(IR, 0x0018, "reactive_power", -246.3, "VAr")
    im.f32(IR, 0x001E, "power_factor", 0.975)
    im.f32(IR, 0x0046, "frequency", 49.98, "Hz")
    im.f32(IR, 0x0048, "import_energy", 3456.78, "kWh")
    im.f32(IR, 0x004A, "export_energy", 12.34, "kWh")
    im.f32(IR, 0x004C, "import_reactive_energy", 234.5, "kvarh")
    im.f32(IR, 0x004E, "export_reactive_energy", 56.7, "kvarh")
    im.f32(IR, 0x0156, "total_energy", 3469.12, "kWh")
    im.f32(IR, 0x0158, "total_reactive_energy", 291.2, "kvarh")
    im.dense(HR, 0x0000, 0x002F)
    im.put(HR, 0x001C, _words("f", 0.0))   # 40029 network baud rate: 0 = 2400 (default)
    im.u32(HR, 0xFC00, "serial_number", 21050123)   # serial number, uint32 (nmakel/sdm_modbus sdm.py SDM120)
    # meter code FC02h "Meter code = 00 20" and software version FC03h, 2 bytes (Eastron SDM120M protocol V2.5 p. 8)
    im.u16(HR, 0xFC02, "meter_code", 0x0020)
    im.u16(HR, 0xFC03, "software_version", 0x0102)
    return im


def sdm230(unit):
    im = Image("sdm230", "eastron-sdm230",
               "volkszaehler/mbmd sdm230.go, reaper7 SDM.h SDM230 column, AGG Software SDM230 page, Tasmota "
               "configurations.md (no manufacturer document)")
    im.notes.append("unlisted input registers inside 30001..30346 answer 0 (not documented)")
    im.dense(IR, 0x0000, 0x0159)
    im.f32(IR, 0x0000, "voltage", 238.4, "V")
    im.f32(IR, 0x0006, "current", 3.21, "A")
    im.f32(IR, 0x000C, "active_power", 742.6, "W")
    im.f32(IR, 0x0012, "apparent_power", 765.3, "VA")
    im.f32(IR, 0x0018, "reactive_power", 185.0, "VAr")
    im.f32(IR, 0x001E, "power_factor", 0.970)
    im.f32(IR, 0x0024, "phase_angle", 14.07, "deg")
    im.f32(IR, 0x0046, "frequency", 50.03, "Hz")
    im.f32(IR, 0x0048, "import_energy", 1523.4, "kWh")
    im.f32(IR, 0x004A, "export_energy", 0.56, "kWh")
    im.f32(IR, 0x004C, "import_reactive_energy", 87.6, "kvarh")
    im.f32(IR, 0x004E, "export_reactive_energy", 4.3, "kvarh")
    im.f32(IR, 0x0054, "power_demand", 651.2, "W")
    im.f32(IR, 0x0056, "max_power_demand", 3480.0, "W")
    im.f32(IR, 0x0156, "total_energy", 1523.96, "kWh")
    im.f32(IR, 0x0158, "total_reactive_energy", 91.9, "kvarh")
    im.u32(HR, 0xFC00, "serial_number", 19120456)   # serial number, uint32 (nmakel/sdm_modbus sdm.py SDM230)
    return im


def sdm630(unit):
    im = Image("sdm630", "eastron-sdm630",
               "Eastron SDM630Modbus Protocol Implementation V1.7 (FC04, IEEE 754, most significant register "
               "first; 'maximum of 30 values … 60 registers … exceeding this limit prompts … an exception')",
               max_registers=60, limit_source="Eastron SDM630 V1.7: at most 60 registers per request")
    im.notes.append("unlisted input registers inside 30001..30384 answer 0 (not documented)")
    im.notes.append("the exception code for an over-limit request is not documented: 3 (illegal data value)")
    im.dense(IR, 0x0000, 0x017F)
    for i, (v, a, p, va, var, pf) in enumerate([
            (230.1, 12.34, 2780.5, 2839.4, 563.1, 0.979),
            (231.4, 10.56, 2390.2, 2443.5, -497.3, 0.978),
            (229.7, 11.78, 2650.8, 2705.9, 541.2, 0.98)]):
        n = i + 1
        im.f32(IR, 0x0000 + 2 * i, f"voltage_l{n}", v, "V")
        im.f32(IR, 0x0006 + 2 * i, f"current_l{n}", a, "A")
        im.f32(IR, 0x000C + 2 * i, f"active_power_l{n}", p, "W")
        im.f32(IR, 0x0012 + 2 * i, f"apparent_power_l{n}", va, "VA")
        im.f32(IR, 0x0018 + 2 * i, f"reactive_power_l{n}", var, "VAr")
        im.f32(IR, 0x001E + 2 * i, f"power_factor_l{n}", pf)
    im.f32(IR, 0x002A, "voltage_avg", 230.4, "V")
    im.f32(IR, 0x002E, "current_avg", 11.56, "A")
    im.f32(IR, 0x0030, "current_sum", 34.68, "A")
    im.f32(IR, 0x0034, "total_power", 7821.5, "W")
    im.f32(IR, 0x0038, "total_apparent_power", 7988.8, "VA")
    im.f32(IR, 0x003C, "total_reactive_power", 607.0, "VAr")
    im.f32(IR, 0x003E, "total_power_factor", 0.979)
    im.f32(IR, 0x0046, "frequency", 49.98, "Hz")
    im.f32(IR, 0x0048, "import_energy", 23456.7, "kWh")
    im.f32(IR, 0x004A, "export_energy", 321.4, "kWh")
    im.f32(IR, 0x00C8, "voltage_l1_l2", 399.2, "V")
    im.f32(IR, 0x00CA, "voltage_l2_l3", 398.1, "V")
    im.f32(IR, 0x00CC, "voltage_l3_l1", 400.5, "V")
    im.f32(IR, 0x00E0, "neutral_current", 1.23, "A")
    im.f32(IR, 0x0156, "total_energy", 23778.1, "kWh")   # = import + export, as the document says
    im.f32(IR, 0x0158, "total_reactive_energy", 4567.8, "kvarh")
    # what volkszaehler/mbmd's SDM reader polls besides (meters/rs485/sdm.go)
    im.f32(IR, 0x004C, "import_reactive_energy", 4321.5, "kvarh")
    im.f32(IR, 0x004E, "export_reactive_energy", 246.3, "kvarh")
    im.f32(IR, 0x0054, "total_power_demand", 7650.2, "W")
    for i, thd in enumerate([2.31, 2.45, 2.18]):
        im.f32(IR, 0x00EA + 2 * i, f"voltage_thd_l{i + 1}", thd, "%")
    im.f32(IR, 0x00F8, "voltage_thd_avg", 2.31, "%")
    for i, (imp, exp) in enumerate([(8123.4, 101.2), (7234.5, 110.3), (8098.8, 109.9)]):
        im.f32(IR, 0x015A + 2 * i, f"import_energy_l{i + 1}", imp, "kWh")
        im.f32(IR, 0x0160 + 2 * i, f"export_energy_l{i + 1}", exp, "kWh")
        im.f32(IR, 0x0166 + 2 * i, f"total_energy_l{i + 1}", round(imp + exp, 1), "kWh")
    # the rest of Eastron's V1.8 input table (a Tinkerforge WARP charger reads every one of them)
    for i, angle in enumerate([11.8, 12.1, 11.5]):
        im.f32(IR, 0x0024 + 2 * i, f"phase_angle_l{i + 1}", angle, "deg")
    im.f32(IR, 0x0042, "total_phase_angle", 11.8, "deg")
    im.f32(IR, 0x0050, "total_apparent_energy", 24012.3, "kVAh")
    im.f32(IR, 0x0052, "total_ampere_hours", 104321.5, "Ah")
    im.f32(IR, 0x0056, "max_total_power_demand", 10234.5, "W")
    im.f32(IR, 0x0064, "total_apparent_power_demand", 7801.4, "VA")
    im.f32(IR, 0x0066, "max_total_apparent_power_demand", 10456.2, "VA")
    im.f32(IR, 0x0068, "neutral_current_demand", 1.12, "A")
    im.f32(IR, 0x006A, "max_neutral_current_demand", 3.45, "A")
    im.f32(IR, 0x00CE, "voltage_ll_avg", 399.3, "V")
    for i, thd in enumerate([8.12, 7.95, 8.31]):
        im.f32(IR, 0x00F0 + 2 * i, f"current_thd_l{i + 1}", thd, "%")
    im.f32(IR, 0x00FA, "current_thd_avg", 8.13, "%")
    for i, (dem, mx) in enumerate([(11.2, 24.6), (9.87, 21.3), (10.9, 23.8)]):
        im.f32(IR, 0x0102 + 2 * i, f"current_demand_l{i + 1}", dem, "A")
        im.f32(IR, 0x0108 + 2 * i, f"max_current_demand_l{i + 1}", mx, "A")
    for i, (a, b, thd) in enumerate([(1, 2, 2.05), (2, 3, 2.11), (3, 1, 1.98)]):
        im.f32(IR, 0x014E + 2 * i, f"voltage_thd_l{a}_l{b}", thd, "%")
    im.f32(IR, 0x0154, "voltage_ll_thd_avg", 2.05, "%")
    for i, (imp, exp) in enumerate([(1450.2, 82.1), (1523.7, 79.4), (1347.6, 84.8)]):
        im.f32(IR, 0x016C + 2 * i, f"import_reactive_energy_l{i + 1}", imp, "kvarh")
        im.f32(IR, 0x0172 + 2 * i, f"export_reactive_energy_l{i + 1}", exp, "kvarh")
        im.f32(IR, 0x0178 + 2 * i, f"total_reactive_energy_l{i + 1}", round(imp + exp, 1), "kvarh")
    # serial number: holding FC00h (464513), unsigned int32, read only (B+G e-tech SDM630-Modbus MID V2 manual p. 30)
    im.u32(HR, 0xFC00, "serial_number", 20340789)
    # meter code: holding FC02h (464515), 0070h on an SDM630 (Tinkerforge/evse-v2-bricklet software/src/sdm.c)
    im.u16(HR, 0xFC02, "meter_code", 0x0070)
    # system type: holding 40011 (000Ah), float, 3p4w = 3 (Eastron SDM630 protocol V1.8)
    im.f32(HR, 0x000A, "system_type", 3.0)
    return im


def sdm72d_m(unit):
    im = Image("sdm72d-m", "eastron-sdm72d-m",
               "B+G e-tech EASTRON SDM72D-M User Manual V1.5 p.14 and SPC SDM72D-M Modbus Protocol v1.1: 30053 "
               "total system power, 30073/30075 import/export kWh, 30343 total kWh, 30385/30389/30391 resettable, "
               "31281/31283 import/export power; 'Each request … restricted to 30 parameters or less'",
               max_registers=60, limit_source="SDM72D-M manual: at most 30 parameters (60 registers) per request")
    im.notes.append("unlisted input registers inside 30001..31284 answer 0 (not documented); "
                    "this original meter has no per-phase values, so those registers read 0")
    im.dense(IR, 0x0000, 0x0503)
    im.f32(IR, 0x0034, "total_power", 4523.7, "W")
    im.f32(IR, 0x0048, "import_energy", 18234.5, "kWh")
    im.f32(IR, 0x004A, "export_energy", 102.3, "kWh")
    im.f32(IR, 0x0156, "total_energy", 18336.8, "kWh")
    im.put(IR, 0x0180, _words("f", 1834.5))   # 30385 resettable total kWh (not in our model)
    im.put(IR, 0x0500, _words("f", 4523.7))   # 31281 import power
    return im


def sdm72d_m_2(unit):
    im = Image("sdm72d-m-2", "eastron-sdm72d-m-2",
               "Eastron SDM72D-M-2 User Manual V1.1 (register list from 30001, the SDM630 map subset); "
               "volkszaehler/mbmd sdm72v2.go; reaper7 SDM.h 'SDM72 V2'",
               max_registers=60, limit_source="SDM72D-M family: at most 30 parameters (60 registers) per request")
    im.notes.append("unlisted input registers inside 30001..31284 answer 0 (not documented)")
    im.dense(IR, 0x0000, 0x0503)
    for i, (v, a, p) in enumerate([(229.8, 10.12, 2254.1), (231.2, 8.76, 1987.3), (230.5, 9.54, 2101.8)]):
        n = i + 1
        im.f32(IR, 0x0000 + 2 * i, f"voltage_l{n}", v, "V")
        im.f32(IR, 0x0006 + 2 * i, f"current_l{n}", a, "A")
        im.f32(IR, 0x000C + 2 * i, f"active_power_l{n}", p, "W")
    im.f32(IR, 0x0034, "total_power", 6343.2, "W")
    im.f32(IR, 0x0046, "frequency", 50.01, "Hz")
    im.f32(IR, 0x0048, "import_energy", 45678.9, "kWh")
    im.f32(IR, 0x004A, "export_energy", 1234.5, "kWh")
    im.f32(IR, 0x0156, "total_energy", 46913.4, "kWh")
    return im


# =============================================================================================
# Carlo Gavazzi EM111: INT32 least significant word first (MSB->LSB inside a word), fixed weights;
# FC03 and FC04 "have exactly the same effect"; at most 50 registers per request; overflow = MSB value
# 7FFFFFFFh (word order FFFF 7FFF); "Not available, value = 0" for unsupported registers.
# =============================================================================================

def em111(unit, key="em111", overflow=False):
    im = Image(key, "carlo-gavazzi-em111",
               "Carlo Gavazzi EM100/ET100 Series Modbus Communication Protocol v4.0 (INT32 LSW->MSW; "
               "weights V*10, A*1000, W*10, PF*1000, Hz*10, kWh*10; EM111 answers at most 50 registers)",
               max_registers=50, limit_source="Carlo Gavazzi protocol v4.0: EM111 at most 50 registers per request")
    im.same_03_04 = True
    im.notes.append("registers the meter does not support answer 0 ('Not available, value = 0'): 0000h..04FFh dense")
    im.dense(IR, 0x0000, 0x04FF)
    if overflow:
        im.put(IR, 0x0000, [0xFFFF, 0x7FFF])   # the document's overflow frame ("EEE" on the display)
        im.expect("voltage", None, "V", reason="overflow")
    else:
        im.i32(IR, 0x0000, "voltage", 230.1, 10, "V", "lsw")
    im.i32(IR, 0x0002, "current", 5.432, 1000, "A", "lsw")
    im.i32(IR, 0x0004, "active_power", 1187.3, 10, "W", "lsw")
    im.i32(IR, 0x0006, "apparent_power", 1249.8, 10, "VA", "lsw")
    im.i32(IR, 0x0008, "reactive_power", -389.1, 10, "var", "lsw")
    im.i32(IR, 0x000A, "power_demand", 1102.4, 10, "W", "lsw")
    im.i32(IR, 0x000C, "power_demand_peak", 2987.6, 10, "W", "lsw")
    im.i16(IR, 0x000E, "power_factor", 0.95, 1000)
    im.i16(IR, 0x000F, "frequency", 49.9, 10, "Hz")
    im.i32(IR, 0x0010, "import_energy", 12345.6, 10, "kWh", "lsw")        # 0x0001E240: the words differ
    im.i32(IR, 0x0012, "import_reactive_energy", 2345.6, 10, "kvarh", "lsw")
    im.i32(IR, 0x0020, "export_energy", 98765.4, 10, "kWh", "lsw")        # 0x000F1206
    return im


# =============================================================================================
# Schneider iEM3155: FC03, float32 big-endian, energies INT64 Wh; the manual numbers registers from 1
# (register 3000 = wire 2999); "only supports FC03 (read) and FC16 (write)".
# =============================================================================================

def iem3155(unit):
    im = Image("iem3155", "schneider-iem3155",
               "volkszaehler/mbmd iem3000.go (wire 0x0BB7 …, energies Int64 Wh), Tasmota xnrg_16_iem3000.ino, "
               "jacobstim/wattmonitor A9MEM3155.py; mbmap-library note: FC03 and FC16 only")
    im.refused_functions = {4: (1, "FC04 not supported (FC03/FC16 only)"), 6: (1, "FC06 not supported (FC03/FC16 only)")}
    im.notes.append("registers 3000..3110 and 3204..3211 answer (reserved ones 0); others exception 2; limit not documented")
    im.dense(HR, 2999, 3110)
    im.dense(HR, 3203, 3210)
    im.f32(HR, 2999, "current_l1", 12.5, "A")
    im.f32(HR, 3001, "current_l2", 11.8, "A")
    im.f32(HR, 3003, "current_l3", 13.1, "A")
    im.f32(HR, 3009, "current_avg", 12.467, "A")
    im.f32(HR, 3019, "voltage_l1_l2", 400.2, "V")
    im.f32(HR, 3021, "voltage_l2_l3", 401.5, "V")
    im.f32(HR, 3023, "voltage_l3_l1", 399.8, "V")
    im.f32(HR, 3027, "voltage_l1", 231.0, "V")
    im.f32(HR, 3029, "voltage_l2", 231.8, "V")
    im.f32(HR, 3031, "voltage_l3", 230.6, "V")
    im.f32(HR, 3035, "voltage_ln_avg", 231.133, "V")
    im.f32(HR, 3053, "active_power_l1", 2.843, "kW")
    im.f32(HR, 3055, "active_power_l2", 2.701, "kW")
    im.f32(HR, 3057, "active_power_l3", 2.995, "kW")
    im.f32(HR, 3059, "total_active_power", 8.539, "kW")
    im.f32(HR, 3067, "total_reactive_power", 1.234, "kvar")
    im.f32(HR, 3075, "total_apparent_power", 8.651, "kVA")
    im.f32(HR, 3083, "power_factor", 0.987)
    im.f32(HR, 3109, "frequency", 50.01, "Hz")
    im.i64(HR, 3203, "import_energy", 12345.678, 1000, "kWh")   # 12345678 Wh
    im.i64(HR, 3207, "export_energy", 4.321, 1000, "kWh")       # 4321 Wh
    return im


# =============================================================================================
# Peacefair PZEM-016 / PZEM-004T v3: FC04 registers 0..9; 32-bit values low word first.
# =============================================================================================

def pzem(unit, key, model, v, a, w, wh, hz, pf, threshold, alarm=False):
    im = Image(key, model,
               "Tasmota xnrg_05_pzem_ac.ino, ESPHome pzemac.cpp, mandulaj/PZEM-004T-v30 (REG_VOLTAGE 0x0000 … "
               "REG_ALARM 0x0009; WREG_ALARM_THR 0x0001, WREG_ADDR 0x0002): 32-bit values low word first; "
               "Peacefair register table (jabastien/STM32_PZEM016): 0x0009 \"0xFFFF is alarm, 0x0000 is not alarm\"")
    im.notes.append("only the documented registers exist (input 0..9, holding 1..2); limit not documented")
    im.u16(IR, 0x0000, "voltage", v, 10, "V")
    im.u32(IR, 0x0001, "current", a, 1000, "A", "lsw")
    im.u32(IR, 0x0003, "power", w, 10, "W", "lsw")
    im.u32(IR, 0x0005, "energy", wh, 1, "Wh", "lsw")
    im.u16(IR, 0x0007, "frequency", hz, 10, "Hz")
    im.u16(IR, 0x0008, "power_factor", pf, 100)
    im.u16(IR, 0x0009, "alarm", 0xFFFF if alarm else 0)   # 0xFFFF = alarm, 0x0000 = no alarm
    im.u16(HR, 0x0001, "power_alarm_threshold", threshold, 1, "W")
    im.put(HR, 0x0002, [unit])                  # WREG_ADDR: the slave address
    return im


def pzem016(unit):
    return pzem(unit, "pzem-016", "peacefair-pzem-016", 230.8, 21.345, 4812.6, 1234567, 50.1, 0.97, 23000)


def pzem004t(unit):
    # 7123.4 W is over the 2300 W threshold: the meter raises its alarm register
    return pzem(unit, "pzem-004t", "peacefair-pzem-004t-v3", 227.3, 8.765, 7123.4, 98765, 49.9, 0.88, 2300, alarm=True)


# =============================================================================================
# Hiking DDS238-2 ZN/S: FC03; words/dwords big-endian; "does not understand … (06h), only … (10h)".
# =============================================================================================

def dds238(unit):
    im = Image("dds238", "hiking-dds238-2-zn-s",
               "AndreasIBZ/energymeter README (holding 0000h total 1/100 kWh … 0011h 1/100 Hz; FC06 not "
               "understood) and Tasmota xnrg_09_dds2382.ino (18 registers from 0; 'version 2' layout)")
    im.refused_functions = {6: (1, "FC06 not understood (FC16 only)")}
    im.notes.append("registers 0000h..0015h exist (0002h..0007h and 0012h..0014h 'reserved'); 'version 2' layout "
                    "(export 0008h, import 000Ah); reactive power written positive (its sign handling is disputed)")
    im.dense(HR, 0x0000, 0x0015)
    im.u32(HR, 0x0000, "total_energy", 1234.56, 100, "kWh")   # 0x0001E240
    im.u32(HR, 0x0008, "export_energy", 12.34, 100, "kWh")
    im.u32(HR, 0x000A, "import_energy", 1222.22, 100, "kWh")
    im.u16(HR, 0x000C, "voltage", 231.4, 10, "V")
    im.u16(HR, 0x000D, "current", 5.67, 100, "A")
    im.i16(HR, 0x000E, "active_power", -1234, 1, "W")          # signed word: exporting
    im.u16(HR, 0x000F, "reactive_power", 321, 1, "VAr")
    im.u16(HR, 0x0010, "power_factor", 0.942, 1000)
    im.u16(HR, 0x0011, "frequency", 50.02, 100, "Hz")
    im.put(HR, 0x0015, [(unit << 8) | 0x01])                    # 0015h: station address high byte, baud code low byte
    im.expect("station_address", unit)
    im.expect("baud_rate", 9600, "baud")                        # code 1 = 9600 Bd (README note 2, the default)
    return im


# =============================================================================================
# Temperature / humidity / soil sensors
# =============================================================================================

def xy_md02(unit):
    im = Image("xy-md02", "xy-md02",
               "XY-MD02 vendor sheet (SantaClaas/serial): input 0x0001 temperature signed /10 (example 0xFF33 = "
               "-20.5 C), 0x0002 humidity /10; holding 0x0101 address, 0x0102 baud code 0:9600 1:14400 2:19200, "
               "0x0103/0x0104 corrections /10")
    im.notes.append("input 0x0001..0x0002 and holding 0x0101..0x0104 exist; limit not documented")
    im.put(IR, 0x0001, [0xFF33]); im.expect("temperature", -20.5, "°C")   # the sheet's own example
    im.u16(IR, 0x0002, "humidity", 55.3, 10, "%RH")
    im.u16(HR, 0x0101, "slave_address", unit)
    # 0x0102 holds code 0 = 9600 per the vendor table (disputed: others store 9600 itself). The model shows
    # the raw value as stored, so a sensor at 9600 set by code reads 0.
    im.put(HR, 0x0102, [0]); im.expect("baud_rate", 0)
    im.i16(HR, 0x0103, "temperature_correction", -1.5, 10, "°C")
    im.i16(HR, 0x0104, "humidity_correction", 2.0, 10, "%RH")
    return im


def rs_ws_n01(unit):
    im = Image("rs-ws-n01", "renke-rs-ws-n01",
               "tspi.at RS-WS-N01-8 page: holding 0x0000 humidity x10, 0x0001 temperature x10; 0x07D0 address, "
               "0x07D1 baud code 0/1/2 = 2400/4800/9600 (the author enumerated all registers)")
    im.notes.append("only 0x0000..0x0001 and 0x07D0..0x07D1 exist; temperature positive (sign handling unverified)")
    im.u16(HR, 0x0000, "humidity", 41.7, 10, "%RH")
    im.i16(HR, 0x0001, "temperature", 21.6, 10, "°C")
    im.u16(HR, 0x07D0, "slave_address", unit)
    im.put(HR, 0x07D1, [1]); im.expect("baud_rate", 4800, "baud")    # code 1 = 4800 (the factory setting)
    return im


def thc_s(unit):
    im = Image("thc-s", "comwintop-soil-thc-s",
               "ComWinTop CWT-Soil-THC-S manual V1.1: FC03; 0000 humidity 0.1 %RH, 0001 temperature 0.1 C two's "
               "complement, 0002 conductivity uS/cm (example answer 02 92 FF 9B 03 E8 = 65.8 %, -10.1 C, 1000 uS/cm); "
               "0022 conductivity factor 0-100 = 0.0-10.0 %; 07D0/07D1 address/baud")
    im.notes.append("0000..0004, 0022..0024, 0050..0052, 07D0..07D1 exist; limit not documented")
    im.put(HR, 0x0000, [0x0292, 0xFF9B, 0x03E8])   # the manual's example answer
    # the manual labels register 0000 "Humidity … 0.1 %RH"; for soil it is the water content in %: either spelling
    im.expect("moisture", 65.8, ["%", "%RH"])
    im.expect("temperature", -10.1, "°C")
    im.expect("conductivity", 1000, "uS/cm")
    im.put(HR, 0x0003, [512, 640])                 # salinity, TDS
    im.u16(HR, 0x0022, "ec_coefficient", 2.5, 10, "%")
    im.put(HR, 0x0023, [0, 0])
    im.put(HR, 0x0050, [0, 0, 0])
    im.u16(HR, 0x07D0, "slave_address", unit)
    im.put(HR, 0x07D1, [1]); im.expect("baud_rate", 4800, "baud")    # code 0/1/2 = 2400/4800/9600: 4800 default
    return im


# =============================================================================================
# Waveshare boards (V2 protocol)
# =============================================================================================

def ws_relay(unit):
    im = Image("ws-relay", "waveshare-modbus-rtu-relay",
               "NavasotaBrewing/brewdrivers wavesharev2.rs (coils 0x0000..0x0007 FC01/FC05; FC03 0x8000 software "
               "version value/100, 'v2.00'; 0x4000 device address) and the Waveshare wiki (V2 protocol)")
    im.notes.append("coils 0..7, holding 0x4000 and 0x8000 exist; limit not documented")
    for i, on in enumerate([1, 0, 1, 1, 0, 0, 0, 1]):
        im.bit(CO, i, f"relay_{i + 1}", on)
    im.u16(HR, 0x8000, "software_version", 2.0, 100)    # 200 = v2.00
    im.put(HR, 0x4000, [unit])                            # device address
    return im


def ws_io8(unit):
    im = Image("ws-io8", "waveshare-modbus-rtu-io-8ch",
               "pyfunc/modapi rtu/devices.py (outputs FC01/FC05 coils 0..7, inputs FC02 discrete 0..7, output "
               "modes holding 0x1000+n) and the Waveshare wiki")
    im.notes.append("coils 0..7, discrete inputs 0..7, holding 0x1000..0x1007 and 0x4000 exist; limit not documented")
    for i, on in enumerate([0, 1, 1, 0, 1, 0, 0, 1]):
        im.bit(CO, i, f"output_{i + 1}", on)
    for i, on in enumerate([1, 1, 0, 0, 0, 1, 0, 1]):
        im.bit(DI, i, f"input_{i + 1}", on)
    im.put(HR, 0x1000, [0] * 8)   # output modes: 0 = normal
    im.put(HR, 0x4000, [unit])
    return im


# =============================================================================================
# ABB ACS355 embedded fieldbus (ABB Drives profile): 40001..40012 control/reference/status/actuals,
# parameters at 40101..49999 (40102 = parameter 0102); "register addresses that do not correspond with
# drive parameters are invalid" -> exception 2, so the image is sparse.
# =============================================================================================

def acs355(unit, key="acs355", tripped=False):
    im = Image(key, "abb-acs355",
               "ABB ACS355 user manual, embedded fieldbus register mapping (40001 control word … 40005..40012 "
               "actual values 1..8 selected by 5310..5317; 40101..49999 = parameters); ABB Drives profile status "
               "word (bit 2 RDY_REF operation enabled, bit 3 TRIPPED fault)")
    im.notes.append("group 01 as in the ACS355 parameter list: 0101..0107, 0109..0115 (no 0108); their scaling "
                    "(0103 0.1 Hz, 0104 0.1 A, 0105 0.1 %, 0106 0.1 kW, 0110 0.1 C) is UNVERIFIED by the audit")
    im.notes.append("limit not documented: protocol maximum")
    im.u16(HR, 0, "control_word", 0x047F if not tripped else 0x0476)
    im.i16(HR, 1, "reference_1", 10000 if not tripped else 0)
    im.i16(HR, 2, "reference_2", -5000 if not tripped else 0)
    # status word: 0x0337 = bits 0,1,2 (ready on/run/ref), 4,5 (no OFF2/OFF3), 8 (at setpoint), 9 (remote);
    # tripped: 0x0238 = bit 3 fault, 4, 5, 9.
    status = 0x0238 if tripped else 0x0337
    im.u16(HR, 3, "status_word", status)
    im.expect("running", 0 if tripped else 1)
    im.expect("fault", 1 if tripped else 0)
    speed = 0 if tripped else 1450
    torque = 0 if tripped else 62.5
    im.i16(HR, 4, "actual_1", speed)                   # 5310 = 102 (speed)
    im.i16(HR, 5, "actual_2", round(torque * 10))      # 5311 = 105 (torque, raw)
    im.put(HR, 6, [0] * 6)                             # actual values 3..8
    im.i16(HR, 100, None, speed)                       # 0101 SPEED & DIR
    im.i16(HR, 101, "speed", speed, 1, "rpm")          # 0102 SPEED
    im.i16(HR, 102, "output_frequency", 0 if tripped else 48.7, 10, "Hz")
    im.u16(HR, 103, "current", 0 if tripped else 7.3, 10, "A")
    im.i16(HR, 104, "torque", torque, 10, "%")
    im.i16(HR, 105, "power", 0 if tripped else 3.7, 10, "kW")
    im.u16(HR, 106, "dc_bus_voltage", 538, 1, "V")
    # 0108: no such parameter -> a hole
    im.u16(HR, 108, "output_voltage", 0 if tripped else 372, 1, "V")
    im.i16(HR, 109, "drive_temperature", 41.2, 10, "°C")
    im.put(HR, 110, [0, 0, 0, 0, 0])                   # 0111..0115
    im.put(HR, 5304, [0])                              # 5305 EFB CTRL PROFILE: ABB DRV LIM
    im.put(HR, 5309, [102, 105])                       # 5310/5311: actual value 1/2 selectors
    return im


# =============================================================================================
# ABB B23 / B24 (three-phase meter): FC03, big-endian words/dwords; energies UINT64 0.01 kWh,
# voltages UINT32 0.1 V, currents UINT32 0.01 A, powers INT32 0.01 W/var/VA, frequency UINT16 0.01 Hz,
# PF INT16 0.001. Not available = all bits set (unsigned) or 0x7F FF.. (signed).
# =============================================================================================

def b23(unit, key="b23", steel=False):
    im = Image(key, "abb-b23",
               "volkszaehler/mbmd abb.go (0x5B00 V /10, 0x5B0C A /100, 0x5B14 W int32 /100, 0x5000 import uint64 "
               "/100 kWh, 0x5B2C Hz /100, 0x5B3A PF int16 /1000; NaN = FF.. unsigned / 7F FF.. signed); openWB "
               "b23.py (same; NAN table UINT_16 0xFFFF, INT_16 0x7FFF, UINT_32 0xFFFFFFFF, INT_32 0x7FFFFFFF, "
               "UINT_64 0xFF..FF); steefan85 ABB_B23.h (0x5B06..0x5B0A U L-L, 0x5B12 I N, 0x5B1C Q, 0x5B24 S)")
    im.notes.append("0x5000..0x500B (import, export, net) and 0x5B00..0x5B3D answer; others exception 2; limit not documented")
    if steel:
        im.notes.append("'Steel' B23 112-100: no export counter, neutral current, reactive or apparent power: those read NaN")
    im.dense(HR, 0x5000, 0x500B)
    im.dense(HR, 0x5B00, 0x5B3D)
    im.integer(HR, 0x5000, "import_energy", 123456.78, "Q", 100, "kWh")          # raw 12345678
    if steel:
        im.put(HR, 0x5004, [0xFFFF] * 4); im.expect("export_energy", None, "kWh", reason="not available")
    else:
        im.integer(HR, 0x5004, "export_energy", 2345.67, "Q", 100, "kWh")
    for i, v in enumerate([231.2, 230.8, 232.1]):
        im.u32(HR, 0x5B00 + 2 * i, f"voltage_l{i + 1}", v, 10, "V")
    im.u32(HR, 0x5B06, "voltage_l1_l2", 400.9, 10, "V")
    im.u32(HR, 0x5B08, "voltage_l3_l2", 401.3, 10, "V")
    im.u32(HR, 0x5B0A, "voltage_l1_l3", 399.7, 10, "V")
    for i, a in enumerate([15.43, 14.87, 16.02]):
        im.u32(HR, 0x5B0C + 2 * i, f"current_l{i + 1}", a, 100, "A")
    im.i32(HR, 0x5B14, "active_power", 10234.56, 100, "W")
    for i, w in enumerate([3456.78, 3301.23, 3476.55]):
        im.i32(HR, 0x5B16 + 2 * i, f"active_power_l{i + 1}", w, 100, "W")
    if steel:
        im.put(HR, 0x5B12, [0xFFFF, 0xFFFF]); im.expect("current_n", None, "A", reason="not available")
        im.put(HR, 0x5B1C, [0x7FFF, 0xFFFF]); im.expect("reactive_power", None, "var", reason="not available")
        im.put(HR, 0x5B24, [0x7FFF, 0xFFFF]); im.expect("apparent_power", None, "VA", reason="not available")
    else:
        im.u32(HR, 0x5B12, "current_n", 1.21, 100, "A")
        im.i32(HR, 0x5B1C, "reactive_power", -1234.56, 100, "var")
        im.i32(HR, 0x5B24, "apparent_power", 10408.12, 100, "VA")
    im.u16(HR, 0x5B2C, "frequency", 50.01, 100, "Hz")
    im.i16(HR, 0x5B3A, "power_factor", 0.983, 1000)
    im.put(HR, 0x5B3B, [0x7FFF] * 3)   # per-phase PF: "not available on all devices" (openWB)
    return im


# =============================================================================================
# Deye / Sunsynk single-phase LV hybrid inverter: holding registers, 16-bit; "negative factor" =
# signed in kellerza/sunsynk; 32-bit counters as (low, high) register pairs; temperatures
# raw * 0.1 - 100; state 0 standby, 1 selfcheck, 2 ok, 3 alarm, 4 fault, 5 activating.
# =============================================================================================

def deye_hybrid(unit, key="deye-hybrid", gateway_limit=None):
    im = Image(key, "deye-hybrid-1p",
               "kellerza/sunsynk definitions/single_phase.py ('Sunsynk 5kW&8kW hybrid') and sensors.py "
               "(TempSensor offset 100, InverterStateSensor codes); StephanJoubert home_assistant_solarman "
               "deye_hybrid.yaml; evcc deye-storage.yaml (169 grid power, 184 SOC, 190 battery power)",
               max_registers=gateway_limit,
               limit_source=gateway_limit and "behind an RS-485/TCP gateway that passes at most 20 registers per read "
                                              "(kellerza/sunsynk multi-options: READ_SENSORS_BATCH_SIZE default 20)")
    im.notes.append("holding 0..699 answer (unlisted ones 0: not documented); the inverter's own limit is not documented")
    im.dense(HR, 0, 699)
    im.u16(HR, 59, None, 2)
    im.expect("running_state", ["ok", "normal"])   # sunsynk calls code 2 "ok", the Deye display "Normal"
    im.u16(HR, 70, "daily_battery_charge", 8.4, 10, "kWh")
    im.u16(HR, 71, "daily_battery_discharge", 6.7, 10, "kWh")
    im.u16(HR, 76, "daily_grid_import", 3.2, 10, "kWh")
    im.u16(HR, 77, "daily_grid_export", 11.5, 10, "kWh")
    im.u16(HR, 79, "grid_frequency", 50.02, 100, "Hz")
    im.u32(HR, 81, "total_grid_export", 12345.6, 10, "kWh", "lsw")    # (81, 82): 0x0001E240
    im.u32(HR, 96, "total_pv_energy", 23456.7, 10, "kWh", "lsw")      # (96, 97): 0x00039447
    im.u16(HR, 108, "daily_pv_energy", 21.3, 10, "kWh")
    im.u16(HR, 109, "pv1_voltage", 385.6, 10, "V")
    im.u16(HR, 110, "pv1_current", 9.8, 10, "A")
    im.u16(HR, 150, "grid_voltage", 236.4, 10, "V")
    im.i16(HR, 169, "grid_power", -1520, 1, "W")
    im.i16(HR, 175, "inverter_power", 3210, 1, "W")
    im.i16(HR, 178, "load_power", 1690, 1, "W")
    im.u16(HR, 182, None, 1253)                                       # 1253 * 0.1 - 100 = 25.3 C
    im.expect("battery_temperature", 25.3, "°C")
    im.u16(HR, 183, "battery_voltage", 52.84, 100, "V")
    im.u16(HR, 184, "battery_soc", 87, 1, "%")
    im.i16(HR, 186, "pv1_power", 3780, 1, "W")
    im.i16(HR, 187, "pv2_power", 0, 1, "W")
    im.i16(HR, 190, "battery_power", -1450, 1, "W")
    im.i16(HR, 191, "battery_current", -27.44, 100, "A")
    return im


# =============================================================================================
# SunSpec inverter: "SunS" (0x5375 0x6E53) at the base, then models (ID, L, L registers), chained,
# ended by ID 0xFFFF (L 0). Model 1 (common, L 66): Mn 16 regs, Md 16, Opt 8, Vr 8, SN 16, DA, Pad.
# Models 101/103 (L 50): A, AphA..C, A_SF, PPVphAB..CA, PhVphA..C, V_SF, W, W_SF, Hz, Hz_SF, VA, VA_SF,
# VAr, VAr_SF, PF, PF_SF, WH (acc32), WH_SF, DCA, DCA_SF, DCV, DCV_SF, DCW, DCW_SF, TmpCab, TmpSnk,
# TmpTrns, TmpOt, Tmp_SF, St, StVnd, Evt1 (bitfield32), Evt2, EvtVnd1..4. value = raw * 10^SF.
# Not implemented: int16 0x8000, uint16 0xFFFF, acc32 0, enum16 0xFFFF, bitfield32 0xFFFFFFFF, sunssf 0x8000.
# =============================================================================================

def sunspec_inverter(unit, key="sunspec-103", base=40000, model_id=103, end_length=True, fixed=False):
    # fixed: the layout of board/models/sunspec-inverter-103.json and its variants 101, 102 (model 1 with
    # L 65, no Pad; the marker, IDs and lengths are points of that model, and it has no bit points)
    im = Image(key, f"sunspec-inverter-{model_id}" if fixed else "sunspec-inverter",
               "SunSpec Alliance sunspec/models json/model_1.json and model_101/103.json (point order and sizes, "
               "scale factors); not-implemented values from sunspec/pysunspec2 mb.py")
    im.notes.append(f"only {base}..end of the model chain answers; every other address exception 2; limit not documented")
    three = model_id == 103
    # the gateway searches 40000, 0, 50000 (docs/model-fields.md): the addresses before ours answer exception 2
    for probe in (40000, 0, 50000):
        if probe == base:
            break
        im.expected_refusals.append((3, probe, 2))
    im.put(HR, base, [0x5375, 0x6E53])                       # "SunS"
    m1 = base + 2
    common = 65 if fixed else 66
    im.put(HR, m1, [1, common])
    im.put(HR, m1 + 2, [0] * common)
    im.text(HR, m1 + 2, "manufacturer", "RigSolar", 16)
    im.text(HR, m1 + 18, "model", "RS-10K-3P" if three else "RS-4K-1P", 16)
    im.put(HR, m1 + 34, [0] * 8)                             # Opt
    im.text(HR, m1 + 42, "version", "2.31.7", 8)
    im.text(HR, m1 + 50, "serial_number", f"RS{unit:08d}", 16)
    if fixed:
        im.expect("sunspec_id", "SunS"); im.expect("common_id", 1); im.expect("common_length", 65)
        im.text(HR, m1 + 34, "options", "std", 8)
        im.u16(HR, m1 + 66, "device_address", unit)          # DA (L 65: no Pad)
    else:
        im.put(HR, m1 + 66, [unit, 0x8000])                  # DA, Pad
    m = m1 + 2 + common
    im.put(HR, m, [model_id, 50])
    if fixed:
        im.expect("inverter_id", model_id); im.expect("inverter_length", 50)
    im.put(HR, m + 2, [0] * 50)

    def sf_point(offset, name, value, sf, fmt, unit_=None):
        im.integer(HR, m + offset, name, value, fmt, 10 ** -sf, unit_)

    im.put(HR, m + 6, _words("h", -2)); im.expect("a_sf", -2)
    im.put(HR, m + 13, _words("h", -1)); im.expect("v_sf", -1)
    im.put(HR, m + 15, _words("h", 1)); im.expect("w_sf", 1)
    im.put(HR, m + 17, _words("h", -2)); im.expect("hz_sf", -2)
    im.put(HR, m + 19, _words("h", 0)); im.expect("va_sf", 0)
    im.put(HR, m + 21, _words("h", 0)); im.expect("var_sf", 0)
    im.put(HR, m + 23, _words("h", -1)); im.expect("pf_sf", -1)
    im.put(HR, m + 26, _words("h", 0)); im.expect("wh_sf", 0)
    im.put(HR, m + 28, _words("h", -2)); im.expect("dca_sf", -2)
    im.put(HR, m + 30, _words("h", -1)); im.expect("dcv_sf", -1)
    im.put(HR, m + 32, _words("h", 0)); im.expect("dcw_sf", 0)
    im.put(HR, m + 37, _words("h", -1)); im.expect("tmp_sf", -1)
    if three:
        sf_point(2, "ac_current", 26.43, -2, "H", "A")
        sf_point(3, "ac_current_a", 8.81, -2, "H", "A")
        sf_point(4, "ac_current_b", 8.79, -2, "H", "A")
        sf_point(5, "ac_current_c", 8.83, -2, "H", "A")
        sf_point(7, "voltage_ab", 400.2, -1, "H", "V")
        sf_point(8, "voltage_bc", 399.8, -1, "H", "V")
        sf_point(9, "voltage_ca", 400.5, -1, "H", "V")
        sf_point(10, "voltage_an", 231.1, -1, "H", "V")
        sf_point(11, "voltage_bn", 230.8, -1, "H", "V")
        sf_point(12, "voltage_cn", 231.5, -1, "H", "V")
        sf_point(14, "ac_power", 6120, 1, "h", "W")           # raw 612, W_SF +1
    else:
        # model 101 (single phase): phase B/C and line-line voltages are optional -> not implemented
        sf_point(2, "ac_current", 17.52, -2, "H", "A")
        sf_point(3, "ac_current_a", 17.52, -2, "H", "A")
        for off, name, unit_ in [(4, "ac_current_b", "A"), (5, "ac_current_c", "A"), (7, "voltage_ab", "V"),
                                 (8, "voltage_bc", "V"), (9, "voltage_ca", "V"), (11, "voltage_bn", "V"),
                                 (12, "voltage_cn", "V")]:
            im.put(HR, m + off, [0xFFFF]); im.expect(name, None, unit_, reason="not implemented")
        sf_point(10, "voltage_an", 229.4, -1, "H", "V")
        sf_point(14, "ac_power", 4010, 1, "h", "W")
    sf_point(16, "frequency", 50.01, -2, "H", "Hz")
    sf_point(18, "apparent_power", 6190 if three else 4020, 0, "h", "VA")
    sf_point(20, "reactive_power", -950 if three else 280, 0, "h", "var")
    im.put(HR, m + 22, [0x8000]); im.expect("power_factor", None, "%" if fixed else None, reason="not implemented")
    sf_point(24, "energy", 12345678 if three else 4567890, 0, "I", "Wh")       # acc32
    sf_point(27, "dc_current", 15.34, -2, "H", "A")
    sf_point(29, "dc_voltage", 412.3, -1, "H", "V")
    sf_point(31, "dc_power", 6325 if three else 4150, 0, "h", "W")
    sf_point(33, "cabinet_temperature", 41.2, -1, "h", "°C")
    im.put(HR, m + 34, [0x8000, 0x8000, 0x8000])             # TmpSnk, TmpTrns, TmpOt: not implemented
    im.put(HR, m + 38, [4]); im.expect("operating_state", "mppt")   # St 4 = MPPT
    im.put(HR, m + 39, [0xFFFF])                             # StVnd: not implemented
    im.u32(HR, m + 40, "events", 0x80)                       # Evt1 bit 7 OVER_TEMP
    if fixed:
        for name, unit_ in [("heat_sink_temperature", "°C"), ("transformer_temperature", "°C"), ("other_temperature", "°C"), ("vendor_operating_state", None)]:
            im.expect(name, None, unit_, reason="not implemented")
        im.u32(HR, m + 42, "events_2", 0)                    # Evt2: reserved, no event
        for k in range(4):                                   # EvtVnd1-4: not implemented
            im.put(HR, m + 44 + 2 * k, [0xFFFF, 0xFFFF]); im.expect(f"vendor_events_{k + 1}", None, None, reason="not implemented")
    if not fixed:
        im.expect("event_ground_fault", 0)
        im.expect("event_grid_disconnect", 0)
        im.expect("event_over_temperature", 1)
    end = m + 2 + 50
    if fixed:
        im.put(HR, end, [0xFFFF, 0]); im.expect("end_id", 0xFFFF); im.expect("end_length", 0)
    elif end_length:
        im.put(HR, end, [0xFFFF, 0])                         # end of the model chain
    else:
        # some devices serve the end marker without a length after it (pysunspec2 client.py reads ID and L
        # apart "due to some devices not supplying count for the end model id"): end+1 answers exception 2
        im.put(HR, end, [0xFFFF])
        im.notes.append("the end marker 0xFFFF has no length register after it")
    return im


# SunSpec float inverter models 111 (single), 112 (split), 113 (three phase), sunspec/models json/model_113.json:
# ID, L = 60, then float32 (high word first) A 2, AphA 4, AphB 6, AphC 8, PPVphAB 10, PPVphBC 12, PPVphCA 14,
# PhVphA 16, PhVphB 18, PhVphC 20, W 22, Hz 24, VA 26, VAr 28, PF 30 (Pct), WH 32, DCA 34, DCV 36, DCW 38,
# TmpCab 40, TmpSnk 42, TmpTrns 44, TmpOt 46; St 48 enum16, StVnd 49, Evt1 50 bitfield32, Evt2 52, EvtVnd1-4 54-61.
# No scale factors; not implemented = NaN 0x7FC00000 (pysunspec2 mb.py SUNS_UNIMPL_FLOAT32).
# Model 1 here is 65 registers long, as a Fronius serves it (SolarEdge technical note: "65 = Length of block").

def sunspec_float_inverter(unit, key="sunspec-113", base=40000, model_id=113):
    im = Image(key, "sunspec-inverter",
               "SunSpec Alliance sunspec/models json/model_1.json and model_113.json (float32 points, no scale "
               "factors); not-implemented float32 0x7FC00000 from sunspec/pysunspec2 mb.py")
    im.notes.append(f"only {base}..end of the model chain answers; every other address exception 2; limit not documented")
    for probe in (40000, 0, 50000):
        if probe == base:
            break
        im.expected_refusals.append((3, probe, 2))
    im.put(HR, base, [0x5375, 0x6E53])                       # "SunS"
    m1 = base + 2
    im.put(HR, m1, [1, 65])
    im.put(HR, m1 + 2, [0] * 65)
    im.text(HR, m1 + 2, "manufacturer", "RigSolar", 16)
    im.text(HR, m1 + 18, "model", "RS-8K-3P-F", 16)
    im.text(HR, m1 + 42, "version", "3.0.2", 8)
    im.text(HR, m1 + 50, "serial_number", f"RF{unit:08d}", 16)
    im.put(HR, m1 + 66, [unit])                              # DA (no Pad: L 65)
    m = m1 + 2 + 65
    im.put(HR, m, [model_id, 60])
    im.put(HR, m + 2, [0] * 60)

    def f(offset, name, value, unit_=None):
        im.f32(HR, m + offset, name, value, unit_)

    f(2, "ac_current", 25.125, "A")
    f(4, "ac_current_a", 8.375, "A")
    f(6, "ac_current_b", 8.25, "A")
    f(8, "ac_current_c", 8.5, "A")
    f(10, "voltage_ab", 401.5, "V")
    f(12, "voltage_bc", 400.25, "V")
    f(14, "voltage_ca", 399.75, "V")
    f(16, "voltage_an", 231.75, "V")
    f(18, "voltage_bn", 230.5, "V")
    f(20, "voltage_cn", 232.25, "V")
    f(22, "ac_power", 5873.5, "W")
    f(24, "frequency", 49.98, "Hz")
    f(26, "apparent_power", 5890.0, "VA")
    f(28, "reactive_power", -412.5, "var")
    f(30, "power_factor", 99.5)                              # Pct, as a Fronius on model 113 reports it
    f(32, "energy", 23456789.0, "Wh")
    f(34, "dc_current", 14.5, "A")
    f(36, "dc_voltage", 415.0, "V")
    f(38, "dc_power", 6017.5, "W")
    f(40, "cabinet_temperature", 38.5, "°C")
    im.put(HR, m + 42, [0x7FC0, 0, 0x7FC0, 0, 0x7FC0, 0])   # TmpSnk, TmpTrns, TmpOt: not implemented (NaN)
    im.put(HR, m + 48, [4]); im.expect("operating_state", "mppt")
    im.put(HR, m + 49, [0xFFFF])
    im.u32(HR, m + 50, "events", 0x11)                       # Evt1 bits 0 GROUND_FAULT and 4 GRID_DISCONNECT
    im.expect("event_ground_fault", 1)
    im.expect("event_grid_disconnect", 1)
    im.expect("event_over_temperature", 0)
    # the float models have no scale factors: the model's scale-factor points read 0 (value = raw x 10^0)
    for sf in ("a_sf", "v_sf", "w_sf", "hz_sf", "va_sf", "var_sf", "pf_sf", "wh_sf", "dca_sf", "dcv_sf", "dcw_sf", "tmp_sf"):
        im.expect(sf, 0)
    im.put(HR, m + 2 + 60, [0xFFFF, 0])                      # end of the model chain
    return im


# =============================================================================================
# Chint DTSU666: float32 high word first in holding registers, measurements in 0.1 V / 0.001 A /
# 0.1 W / 0.1 var / 0.001 / 0.01 Hz units (mbmd dtsu666.go scalers; the manual's register table as
# transcribed in gerontec/dtsu666 README.md: 2000h-2004h line voltages, 2006h-200Ah phase voltages).
# =============================================================================================

def dtsu666(unit):
    im = Image("dtsu666", "chint-dtsu666",
               "DTSU666 user manual register table (gerontec/dtsu666 README.md transcription; michielfromNL "
               "DTSU666 emulator) and volkszaehler/mbmd meters/rs485/dtsu666.go (FC03, float32, scalers)")
    im.notes.append("unlisted holding registers inside 0000h-002Eh, 101Eh-102Fh and 2000h-2045h answer 0 (not documented)")
    im.dense(HR, 0x0000, 0x002E)
    im.dense(HR, 0x101E, 0x102F)
    im.dense(HR, 0x2000, 0x2045)

    def scaled(address, name, value, per_unit, unit_=None):
        # the meter's float is in its own unit (0.1 V ...): raw = value * per_unit
        im.put(HR, address, _words("f", value * per_unit))
        im.expect(name, value, unit_, tolerance=max(1e-6, abs(value) * 1e-6))

    im.u16(HR, 0x0000, "software_version", 204)          # the emulator's REV. default
    im.u16(HR, 0x0001, "programming_code", 701)
    im.u16(HR, 0x000B, "meter_type", 166)                # odig's Solax DTSU666 emulator: "meter 166 (0x00A6)"
    im.u16(HR, 0x002E, "address", unit)
    scaled(0x101E, "import_energy", 12345.67, 1, "kWh")
    scaled(0x1028, "export_energy", 2345.5, 1, "kWh")
    # per-phase energies, as volkszaehler/mbmd dtsu666.go reads them (ImportL1-L3, ExportL1-L3)
    for i, (imp, exp) in enumerate([(4100.25, 780.5), (4120.5, 790.25), (4124.92, 774.75)]):
        scaled(0x1020 + 2 * i, f"import_energy_l{i + 1}", imp, 1, "kWh")
        scaled(0x102A + 2 * i, f"export_energy_l{i + 1}", exp, 1, "kWh")
    for i, (ll, ln, a, w, var, pf) in enumerate([
            (400.1, 231.2, 5.123, 1183.4, 120.5, 0.985),
            (399.4, 230.6, 4.876, 1120.8, -98.2, 0.981),
            (401.3, 229.9, 6.012, 1378.1, 140.3, 0.979)]):
        n = i + 1
        scaled(0x2000 + 2 * i, ("voltage_l1_l2", "voltage_l2_l3", "voltage_l3_l1")[i], ll, 10, "V")
        scaled(0x2006 + 2 * i, f"voltage_l{n}", ln, 10, "V")
        scaled(0x200C + 2 * i, f"current_l{n}", a, 1000, "A")
        scaled(0x2014 + 2 * i, f"power_l{n}", w, 10, "W")
        scaled(0x201C + 2 * i, f"reactive_power_l{n}", var, 10, "var")
        scaled(0x202C + 2 * i, f"power_factor_l{n}", pf, 1000)
    scaled(0x2012, "total_power", 3682.3, 10, "W")
    scaled(0x201A, "total_reactive_power", 162.6, 10, "var")
    scaled(0x202A, "power_factor", 0.982, 1000)
    scaled(0x2044, "frequency", 49.98, 100, "Hz")
    return im


# =============================================================================================
# Carlo Gavazzi EM24 Ethernet as Victron reads it (victronenergy/dbus-modbus-client carlo_gavazzi.py,
# mbmd carlogavazzi-em24_e1.go): INT32 least significant word first, holding registers.
# =============================================================================================

def em24(unit):
    im = Image("em24", "carlo-gavazzi-em24",
               "victronenergy/dbus-modbus-client carlo_gavazzi.py (Reg_s32l weights, 000Bh model code, A000h "
               "application, 0302h/0304h versions, 1002h phase config, 5000h serial); mbmd carlogavazzi-em24_e1.go")
    im.same_03_04 = True
    im.notes.append("unlisted registers inside 0000h-004Fh answer 0 (not documented)")
    im.dense(IR, 0x0000, 0x004F)
    for i, (v, a, w, kwh) in enumerate([(230.4, 5.321, 1201.7, 1234.5), (231.1, 4.987, 1100.2, 1111.1), (229.8, 6.105, 1350.9, 1300.2)]):
        n = i + 1
        im.i32(IR, 0x0000 + 2 * i, f"voltage_l{n}", v, 10, "V", "lsw")
        im.i32(IR, 0x000C + 2 * i, f"current_l{n}", a, 1000, "A", "lsw")
        im.i32(IR, 0x0012 + 2 * i, f"power_l{n}", w, 10, "W", "lsw")
        im.i32(IR, 0x0040 + 2 * i, f"import_energy_l{n}", kwh, 10, "kWh", "lsw")
    im.u16(IR, 0x000B, "model_id", 1650)                  # EM24DINAV23XE1PFB
    im.i32(IR, 0x0028, "total_power", -3652.8, 10, "W", "lsw")
    for i, pf in enumerate([0.991, -0.987, 0.978]):
        im.i16(IR, 0x002E + i, f"power_factor_l{i + 1}", pf, 1000)
    im.i16(IR, 0x0031, "power_factor", 0.985, 1000)
    im.u16(IR, 0x0033, "frequency", 50.1, 10, "Hz")
    im.i32(IR, 0x0034, "import_energy", 3645.8, 10, "kWh", "lsw")
    im.i32(IR, 0x004E, "export_energy", 987.6, 10, "kWh", "lsw")
    im.dense(IR, 0x0302, 0x0305)
    im.u16(IR, 0x0302, "hardware_version", 0x1203)        # 1.2.3
    im.u16(IR, 0x0304, "firmware_version", 0x2105)        # 2.1.5
    im.put(IR, 0x1002, [0]); im.expect("phase_config", "3P.n")
    im.text(IR, 0x5000, "serial_number", "BX12345", 7)
    im.u16(IR, 0xA000, "application", 7)
    im.put(IR, 0xA100, [3]); im.expect("switch_position", "Locked")
    return im


# SunSpec meter at a fixed layout (board/models/sunspec-meter-203.json, the SunSpec meter persona):
# sunspec/models json/model_1.json (L 65) and json/model_203.json (L 105); "SunS" at 40000, model 1 at 40002,
# model 203 at 40069, end marker at 40176. value = raw * 10^SF; acc32 0 and int16 0x8000 are not implemented.

def sunspec_meter(unit, key="sunspec-meter-203", model="sunspec-meter-203", meter_id=203):
    # meter_id 201, 202, 204: json/model_201.json, model_202.json, model_204.json have model 203's points,
    # sizes and order (L 105); only the ID differs
    im = Image(key, model,
               f"SunSpec Alliance sunspec/models json/model_1.json and json/model_{meter_id}.json (point order and sizes, "
               "scale factors); not-implemented values from sunspec/pysunspec2 mb.py")
    im.dense(HR, 40000, 40177)
    im.text(HR, 40000, "sunspec_id", "SunS", 2)
    im.u16(HR, 40002, "common_id", 1)
    im.u16(HR, 40003, "common_length", 65)
    im.text(HR, 40004, "manufacturer", "RigMeter", 16)
    im.text(HR, 40020, "model", "RM-3P", 16)
    im.text(HR, 40044, "version", "1.0", 8)
    im.text(HR, 40052, "serial_number", f"RM{unit:08d}", 16)
    im.u16(HR, 40068, "device_address", unit)
    m = 40069
    im.u16(HR, m, "meter_id", meter_id)
    im.u16(HR, m + 1, "meter_length", 105)
    for off in range(2, 107):
        im.put(HR, m + off, [0x8000])                        # int16 points and SFs: not implemented ...
    for off in list(range(38, 54)) + list(range(55, 71)) + list(range(72, 104)):
        im.put(HR, m + off, [0])                             # ... acc32: 0 = not implemented
    im.put(HR, m + 105, [0xFFFF, 0xFFFF])                    # Evt: not implemented
    im.put(HR, m + 6, _words("h", -2)); im.expect("A_SF", -2)
    im.put(HR, m + 15, _words("h", -1)); im.expect("V_SF", -1)
    im.put(HR, m + 17, _words("h", -2)); im.expect("Hz_SF", -2)
    im.put(HR, m + 22, _words("h", 0)); im.expect("W_SF", 0)
    im.put(HR, m + 54, _words("h", 0)); im.expect("TotWh_SF", 0)
    im.integer(HR, m + 2, "current", 12.34, "h", 100, "A")
    im.integer(HR, m + 8, "voltage_an", 230.5, "h", 10, "V")
    im.integer(HR, m + 16, "frequency", 49.98, "h", 100, "Hz")
    im.integer(HR, m + 18, "power", -2150, "h", 1, "W")
    im.integer(HR, m + 46, "import_energy", 1234567, "I", 1, "Wh")
    im.text(HR, 40036, "options", "std", 8)
    im.put(HR, 40176, [0xFFFF, 0]); im.expect("end_id", 0xFFFF); im.expect("end_length", 0)   # end of the chain
    # every other point of model 203 is not implemented here (0x8000, acc32 0, Evt 0xFFFFFFFF)
    shown = {e["name"] for e in im.points}
    for name, unit_ in SUNSPEC_METER_203_POINTS:
        if name not in shown:
            im.expect(name, None, unit_, reason="not implemented")
    return im


# (point, unit) of every model-203 point the image leaves not implemented, as the model file names them
SUNSPEC_METER_203_POINTS = [
    ("current_a", "A"), ("current_b", "A"), ("current_c", "A"), ("voltage_ln", "V"), ("voltage_bn", "V"),
    ("voltage_cn", "V"), ("voltage_ll", "V"), ("voltage_ab", "V"), ("voltage_bc", "V"), ("voltage_ca", "V"),
    ("power_a", "W"), ("power_b", "W"), ("power_c", "W"), ("apparent_power", "VA"),
    ("apparent_power_a", "VA"), ("apparent_power_b", "VA"), ("apparent_power_c", "VA"), ("VA_SF", None),
    ("reactive_power", "var"), ("reactive_power_a", "var"), ("reactive_power_b", "var"),
    ("reactive_power_c", "var"), ("VAR_SF", None), ("power_factor", "%"), ("power_factor_a", "%"),
    ("power_factor_b", "%"), ("power_factor_c", "%"), ("PF_SF", None), ("export_energy", "Wh"),
    ("export_energy_a", "Wh"), ("export_energy_b", "Wh"), ("export_energy_c", "Wh"),
    ("import_energy_a", "Wh"), ("import_energy_b", "Wh"), ("import_energy_c", "Wh"),
    ("apparent_energy_export", "VAh"), ("apparent_energy_export_a", "VAh"),
    ("apparent_energy_export_b", "VAh"), ("apparent_energy_export_c", "VAh"),
    ("apparent_energy_import", "VAh"), ("apparent_energy_import_a", "VAh"),
    ("apparent_energy_import_b", "VAh"), ("apparent_energy_import_c", "VAh"), ("TotVAh_SF", None),
    ("reactive_energy_import_q1", "varh"), ("reactive_energy_import_q1_a", "varh"),
    ("reactive_energy_import_q1_b", "varh"), ("reactive_energy_import_q1_c", "varh"),
    ("reactive_energy_import_q2", "varh"), ("reactive_energy_import_q2_a", "varh"),
    ("reactive_energy_import_q2_b", "varh"), ("reactive_energy_import_q2_c", "varh"),
    ("reactive_energy_export_q3", "varh"), ("reactive_energy_export_q3_a", "varh"),
    ("reactive_energy_export_q3_b", "varh"), ("reactive_energy_export_q3_c", "varh"),
    ("reactive_energy_export_q4", "varh"), ("reactive_energy_export_q4_a", "varh"),
    ("reactive_energy_export_q4_b", "varh"), ("reactive_energy_export_q4_c", "varh"), ("TotVArh_SF", None),
    ("events", None),
]


# The same meter serving the float meter model 213 after 203 (board/models/sunspec-meter-203-213.json):
# sunspec/models json/model_213.json (L 124: 61 float32 in the order below, then Evt bitfield32 at offset 124);
# not implemented float32 0x7FC00000 (NaN) per sunspec/pysunspec2 mb.py. Model 213 at 40176, end marker at 40302.
MODEL_213_FLOATS = [   # (model_213.json point, this library's name, unit), in register order from offset 2
    ("A", "current", "A"), ("AphA", "current_a", "A"), ("AphB", "current_b", "A"), ("AphC", "current_c", "A"),
    ("PhV", "voltage_ln", "V"), ("PhVphA", "voltage_an", "V"), ("PhVphB", "voltage_bn", "V"), ("PhVphC", "voltage_cn", "V"),
    ("PPV", "voltage_ll", "V"), ("PPVphAB", "voltage_ab", "V"), ("PPVphBC", "voltage_bc", "V"), ("PPVphCA", "voltage_ca", "V"),
    ("Hz", "frequency", "Hz"), ("W", "power", "W"), ("WphA", "power_a", "W"), ("WphB", "power_b", "W"), ("WphC", "power_c", "W"),
    ("VA", "apparent_power", "VA"), ("VAphA", "apparent_power_a", "VA"), ("VAphB", "apparent_power_b", "VA"),
    ("VAphC", "apparent_power_c", "VA"), ("VAR", "reactive_power", "var"), ("VARphA", "reactive_power_a", "var"),
    ("VARphB", "reactive_power_b", "var"), ("VARphC", "reactive_power_c", "var"), ("PF", "power_factor", None),
    ("PFphA", "power_factor_a", None), ("PFphB", "power_factor_b", None), ("PFphC", "power_factor_c", None),
] + [(f"{group}{ph}", f"{name}{suffix}", unit_)
     for group, name, unit_ in (("TotWhExp", "export_energy", "Wh"), ("TotWhImp", "import_energy", "Wh"),
                                ("TotVAhExp", "apparent_energy_export", "VAh"), ("TotVAhImp", "apparent_energy_import", "VAh"),
                                ("TotVArhImpQ1", "reactive_energy_import_q1", "varh"), ("TotVArhImpQ2", "reactive_energy_import_q2", "varh"),
                                ("TotVArhExpQ3", "reactive_energy_export_q3", "varh"), ("TotVArhExpQ4", "reactive_energy_export_q4", "varh"))
     for ph, suffix in (("", ""), ("PhA", "_a"), ("PhB", "_b"), ("PhC", "_c"))]


def sunspec_meter_213(unit, meter_id=203, float_id=213):
    # 211, 212, 214 (json/model_211.json ...) have model 213's float points in the same order (L 124)
    name = f"sunspec-meter-{meter_id}-{float_id}"
    im = sunspec_meter(unit, name, name, meter_id)
    im.source += f"; json/model_{float_id}.json (float meter, L 124)"
    m = 40176
    im.u16(HR, m, "float_meter_id", float_id)
    im.u16(HR, m + 1, "float_meter_length", 124)
    shown = {"A": 12.5, "PhVphA": 230.25, "Hz": 49.97, "W": -2150.5, "TotWhImp": 1234567.0}
    assert len(MODEL_213_FLOATS) == 61
    for i, (spec, name, unit_) in enumerate(MODEL_213_FLOATS):
        if spec in shown:
            im.f32(HR, m + 2 + 2 * i, f"float_{name}", shown[spec], unit_)
        else:
            im.put(HR, m + 2 + 2 * i, [0x7FC0, 0])
            im.expect(f"float_{name}", None, unit_, reason="not implemented")
    im.put(HR, m + 124, [0xFFFF, 0xFFFF]); im.expect("float_events", None, reason="not implemented")
    im.put(HR, 40302, [0xFFFF, 0])                          # the end marker, after 213
    return im


# board/models/sunspec-meter.json (finds the chain itself): a meter serving integer model 201 (the registers
# of sunspec_meter above, so the same source), and one serving only the float model 213 (chain 1, 213, end).
def sunspec_meter_reader(unit, key, meter_id):
    im = sunspec_meter(unit, key, "sunspec-meter", meter_id)
    im.points = []                                           # the same registers, stated in this model's names
    im.expected_refusals = []
    im.expect("manufacturer", "RigMeter"); im.expect("model", "RM-3P"); im.expect("version", "1.0")
    im.expect("serial_number", f"RM{unit:08d}")
    for name, value, unit_ in (("a_sf", -2, None), ("v_sf", -1, None), ("hz_sf", -2, None), ("w_sf", 0, None), ("totwh_sf", 0, None),
                               ("current", 12.34, "A"), ("voltage_an", 230.5, "V"), ("frequency", 49.98, "Hz"),
                               ("power", -2150, "W"), ("import_energy", 1234567, "Wh")):
        im.expect(name, value, unit_)
    for name, unit_ in SUNSPEC_METER_READER_UNSET:
        im.expect(name, None, unit_, reason="not implemented")
    for sf in ("va_sf", "var_sf", "pf_sf"):
        im.expect(sf, None, reason="not implemented")
    im.expect("export_energy", None, "Wh", reason="not accumulated")   # acc32 0
    return im


# (point, unit) of the sunspec-meter measurements both reader images leave unset
SUNSPEC_METER_READER_UNSET = [
    ("current_a", "A"), ("current_b", "A"), ("current_c", "A"), ("voltage_ln", "V"), ("voltage_bn", "V"), ("voltage_cn", "V"),
    ("voltage_ll", "V"), ("voltage_ab", "V"), ("voltage_bc", "V"), ("voltage_ca", "V"), ("power_a", "W"), ("power_b", "W"),
    ("power_c", "W"), ("apparent_power", "VA"), ("reactive_power", "var"), ("power_factor", None),
]


def sunspec_meter_reader_float(unit, key="sunspec-meter-213-only"):
    im = Image(key, "sunspec-meter",
               "SunSpec Alliance sunspec/models json/model_1.json (L 65) and json/model_213.json (float meter, L 124: "
               "float32 points in the order of MODEL_213_FLOATS); not-implemented float32 0x7FC00000 from sunspec/pysunspec2 mb.py")
    im.dense(HR, 40000, 40195)
    im.put(HR, 40000, [0x5375, 0x6E53, 1, 65])
    im.text(HR, 40004, "manufacturer", "RigMeter", 16)
    im.text(HR, 40020, "model", "RM-3P-F", 16)
    im.text(HR, 40044, "version", "2.0", 8)
    im.text(HR, 40052, "serial_number", f"RF{unit:08d}", 16)
    im.put(HR, 40068, [unit])
    m = 40069
    im.put(HR, m, [213, 124])
    shown = {"A": 12.5, "PhVphA": 230.25, "Hz": 49.97, "W": -2150.5, "TotWhImp": 1234567.0}
    names = {"A": "current", "PhVphA": "voltage_an", "Hz": "frequency", "W": "power", "TotWhImp": "import_energy"}
    for i, (spec, _name, unit_) in enumerate(MODEL_213_FLOATS):
        if spec in shown:
            im.f32(HR, m + 2 + 2 * i, names[spec], shown[spec], unit_)
        else:
            im.put(HR, m + 2 + 2 * i, [0x7FC0, 0])
    for name, unit_ in SUNSPEC_METER_READER_UNSET + [("export_energy", "Wh")]:
        im.expect(name, None, unit_, reason="not a number")
    im.put(HR, m + 124, [0xFFFF, 0xFFFF])
    im.put(HR, m + 126, [0xFFFF, 0])                         # end of the chain
    # the float model has no scale factors: the model's scale-factor points read 0 (value = raw x 10^0)
    for sf in ("a_sf", "v_sf", "hz_sf", "w_sf", "va_sf", "var_sf", "pf_sf", "totwh_sf"):
        im.expect(sf, 0)
    return im


IMAGES = {
    "sdm120": sdm120,
    "sdm230": sdm230,
    "sdm630": sdm630,
    "sdm72d-m": sdm72d_m,
    "sdm72d-m-2": sdm72d_m_2,
    "em111": em111,
    "em111-overflow": lambda unit: em111(unit, "em111-overflow", overflow=True),
    "iem3155": iem3155,
    "pzem-016": pzem016,
    "pzem-004t": pzem004t,
    "dds238": dds238,
    "xy-md02": xy_md02,
    "rs-ws-n01": rs_ws_n01,
    "thc-s": thc_s,
    "ws-relay": ws_relay,
    "ws-io8": ws_io8,
    "acs355": acs355,
    "acs355-tripped": lambda unit: acs355(unit, "acs355-tripped", tripped=True),
    "b23": b23,
    "b23-steel": lambda unit: b23(unit, "b23-steel", steel=True),
    "deye-hybrid": deye_hybrid,
    "deye-hybrid-gw": lambda unit: deye_hybrid(unit, "deye-hybrid-gw", gateway_limit=20),
    "sunspec-103": sunspec_inverter,
    "sunspec-101": lambda unit: sunspec_inverter(unit, "sunspec-101", base=50000, model_id=101),
    "sunspec-103-nolen": lambda unit: sunspec_inverter(unit, "sunspec-103-nolen", end_length=False),
    "sunspec-113": sunspec_float_inverter,
    "sunspec-meter-203": sunspec_meter,
    "sunspec-meter-203-213": sunspec_meter_213,
    "sunspec-inverter-103": lambda unit: sunspec_inverter(unit, "sunspec-inverter-103", fixed=True),
    "sunspec-inverter-101": lambda unit: sunspec_inverter(unit, "sunspec-inverter-101", model_id=101, fixed=True),
    "sunspec-inverter-102": lambda unit: sunspec_inverter(unit, "sunspec-inverter-102", model_id=102, fixed=True),
    **{f"sunspec-meter-{i}": (lambda i: lambda unit: sunspec_meter(unit, f"sunspec-meter-{i}", f"sunspec-meter-{i}", i))(i) for i in (201, 202, 204)},
    **{f"sunspec-meter-{i}-{i + 10}": (lambda i: lambda unit: sunspec_meter_213(unit, i, i + 10))(i) for i in (201, 202, 204)},
    "sunspec-meter-reader-201": lambda unit: sunspec_meter_reader(unit, "sunspec-meter-reader-201", 201),
    "sunspec-meter-213-only": sunspec_meter_reader_float,
    "dtsu666": dtsu666,
    "em24": em24,
}
