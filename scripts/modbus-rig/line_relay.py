#!/usr/bin/python3
"""One RS-485 medium between ptys: every byte an end writes reaches every other end, garbled when the
sender's or the receiver's serial settings do not match the line's, as a UART at the wrong rate garbles it.

  line_relay.py --dir DIR --line 19200,8,O,1 --ends gw,slave[,other...] [--echo gw] [--seed N]

Each end is a pty this relay owns (os.openpty), its slave side linked at DIR/<end>. The relay keeps every
slave fd open itself, so the master never reads EIO while the end's user has it closed (between the
doctor's tries at one setting and the next); stale bytes written to a closed end are dropped when it is
opened again, because node serialport and pyserial both flush the input queue on open (tcflush TCIFLUSH).
Without that flush the relay would hand an opener the previous setting's garbage.

--echo END hands END its own bytes back as well: a converter without echo suppression.

Each end's settings are read from its pty MASTER fd with tcgetattr: on Linux the master returns the
terminal's (slave's) termios, which is what the end's program set. What a pty can show:
  - the baud rate and CSTOPB (stop bits) are kept as set;
  - PARODD is kept, but PARENB is always cleared on a pty (the kernel has no parity to generate), so
    even parity and no parity look the same here; odd parity can be told from both.
So `--line 19200,8,O,1` is the setting a rig can tell apart from its neighbours; an E or N line accepts
both E and N ends. The bytes are garbled deterministically per run (--seed) with a byte count and values
that differ from what was sent: never delivered clean to or from an end at another setting.

Prints READY on stdout once every link exists; exits on SIGTERM or SIGINT, removing its links.
"""
import argparse, os, random, select, signal, sys, termios, tty

SPEEDS = {getattr(termios, f"B{b}"): b for b in (
    50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400)}


class End:
    def __init__(self, name, directory):
        self.name = name
        self.master, self.slave = os.openpty()
        # Raw from the start: a pty slave echoes what it is sent (ECHO) until its user sets raw mode, and
        # that echo would come back to the relay as bytes this end wrote.
        tty.setraw(self.slave)
        # A full queue of an end nobody reads must not stop the medium: writes that do not fit are lost.
        os.set_blocking(self.master, False)
        self.link = os.path.join(directory, name)
        if os.path.lexists(self.link):
            os.unlink(self.link)
        os.symlink(os.ttyname(self.slave), self.link)

    def settings(self):
        """(baud, stop bits, odd) as this end's program set them (see the docstring for parity)."""
        attrs = termios.tcgetattr(self.master)
        cflag, speed = attrs[2], attrs[5]
        return SPEEDS.get(speed, 0), 2 if cflag & termios.CSTOPB else 1, bool(cflag & termios.PARODD)

    def close(self):
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.unlink(self.link)
        except OSError:
            pass


def parse_line(text):
    """`19200,8,O,1` -> (baud, stop bits, odd)."""
    parts = text.split(",")
    if len(parts) != 4 or parts[1] != "8" or parts[2].upper() not in "NEO" or parts[3] not in ("1", "2"):
        raise SystemExit(f"--line must be BAUD,8,N|E|O,1|2, not {text!r}")
    return int(parts[0]), int(parts[3]), parts[2].upper() == "O"


def garble(data, sent_baud, heard_baud, rng):
    """What a UART at `heard_baud` makes of `data` sent at `sent_baud`: another count of other bytes.

    A receiver sampling at another rate sees start bits where there are none: roughly len × the ratio of
    the rates of characters, each a mix of bits from several sent ones. At the same rate with other stop
    bits or parity, framing and parity errors still change what arrives: one byte more or less.
    """
    ratio = heard_baud / sent_baud if sent_baud and heard_baud else 1.0
    count = max(1, round(len(data) * ratio))
    if count == len(data):
        count = len(data) + 1 if len(data) < 3 or rng.random() < 0.5 else len(data) - 1
    return bytes(rng.randrange(256) for _ in range(count))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--line", required=True)
    ap.add_argument("--ends", required=True)
    ap.add_argument("--echo", default="", help="comma-separated ends that hear their own bytes")
    ap.add_argument("--seed", type=int, default=485)
    args = ap.parse_args()
    line = parse_line(args.line)
    names = [n for n in args.ends.split(",") if n]
    if len(names) < 2 or len(set(names)) != len(names):
        raise SystemExit("--ends needs two or more distinct names")
    echo = {n for n in args.echo.split(",") if n}
    if echo - set(names):
        raise SystemExit(f"--echo names an end that is not in --ends: {', '.join(sorted(echo - set(names)))}")
    rng = random.Random(args.seed)
    ends = [End(n, args.dir) for n in names]
    by_fd = {e.master: e for e in ends}
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    print("READY", flush=True)
    try:
        while not stopping:
            try:
                ready, _, _ = select.select(list(by_fd), [], [], 0.2)
            except InterruptedError:
                continue
            for fd in ready:
                sender = by_fd[fd]
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    continue  # nothing to read after all (the slave is held open here: no EIO)
                if not data:
                    continue
                sent = sender.settings()
                for end in ends:
                    if end is sender and end.name not in echo:
                        continue
                    heard = end.settings()
                    # The sender hears itself at its own setting; others hear the line's bytes, garbled
                    # when either side is off the line's setting.
                    clean = end is sender or (sent == line and heard == line)
                    out = data if clean else garble(data, sent[0], heard[0], rng)
                    try:
                        os.write(end.master, out)
                    except OSError:
                        pass  # the end's queue is full (nobody reads it): a real line loses those bytes too
    finally:
        for e in ends:
            e.close()


if __name__ == "__main__":
    main()
