/**
 * Bus option `rs485`, mode "kernel": RS-485 mode set on the tty with the TIOCSRS485 ioctl, so the UART's driver
 * raises RTS (wired to the transceiver's DE/RE) around every frame itself, timed by the hardware — the Pi's PL011
 * and the SC16IS752 HATs do this.
 *
 * Node has no ioctl(2) and serialport's binding has no RS-485 call, so a one-shot child process makes the call.
 * perl, because Debian's perl-base is Essential: it is in every Debian rootfs, the SD image's included
 * (scripts/build-image.sh installs no python3, and nothing else on it can call ioctl). RS-485 mode is a property
 * of the tty port, kept by the kernel across opens until changed, so the call is made before the gateway opens
 * the port, on each (re)open. Node builds the struct's bytes (protocol/modbus/rs485.ts); perl only passes them on.
 */
import { execFile } from 'node:child_process';
import { serialRs485Bytes, TIOCSRS485, type KernelRs485 } from '../../protocol/modbus/rs485.js';

/**
 * ARGV: the port's path, the struct as hex. O_NONBLOCK: an open must not wait for carrier; O_NOCTTY: the gateway's
 * port must never become its controlling terminal. Prints nothing on success; on failure the errno's text, exit 1.
 */
export const RS485_SCRIPT = [
  'use strict; use Fcntl;',
  'my ($path, $hex) = @ARGV;',
  'sysopen(my $fh, $path, O_RDWR | O_NONBLOCK | O_NOCTTY) or do { print STDERR "open: $!\\n"; exit 1 };',
  'my $buf = pack("H*", $hex);',
  `ioctl($fh, ${TIOCSRS485}, $buf) or do { print STDERR "$!\\n"; exit 1 };`,
].join(' ');

/** What runs the script: execFile's shape (a test stands in a missing perl or a slow one here). */
export type RunFile = (file: string, args: readonly string[], options: { timeout: number }, done: (err: Error | null, stdout: string, stderr: string) => void) => void;

const runFile: RunFile = (file, args, options, done) => {
  execFile(file, args, { ...options, encoding: 'utf8' }, (err, stdout, stderr) => done(err, stdout, stderr));
};

/** A wedged driver must not hold the bus's open: past this the call counts as refused. */
export const RS485_TIMEOUT_MS = 3000;

/** Sets RS-485 mode on `path`: null when the kernel took it, else why not (one line, for the bus's log). */
export function setKernelRs485(path: string, options: KernelRs485, run: RunFile = runFile, perl = 'perl'): Promise<string | null> {
  const hex = Buffer.from(serialRs485Bytes(options)).toString('hex');
  return new Promise((resolve) => {
    run(perl, ['-e', RS485_SCRIPT, path, hex], { timeout: RS485_TIMEOUT_MS }, (err, _stdout, stderr) => {
      if (!err) return resolve(null);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return resolve(`perl is not installed (${perl}), so RS-485 mode cannot be set`);
      if ((err as { killed?: boolean }).killed) return resolve(`setting RS-485 mode took longer than ${RS485_TIMEOUT_MS} ms`);
      resolve((stderr || err.message).trim().split('\n').pop() || 'failed');
    });
  });
}

/** The one warning line of a port that refused RS-485 mode: what it means, and that the bus runs anyway. */
export function rs485RefusedNote(path: string, reason: string): string {
  if (reason.startsWith('perl ') || reason.startsWith('setting ')) return `bus rs485: ${path}: ${reason}; the bus runs without it`;
  return `bus rs485: ${path} refused RS-485 mode (${reason}): a USB adapter with automatic direction needs no rs485 option; the bus runs without it`;
}
