/**
 * RS-485 direction, pure: the bytes of the kernel's `struct serial_rs485` for the TIOCSRS485 ioctl (bus option
 * `rs485`, mode "kernel"), and when a DE pin driven by the gateway (mode "gpio") may fall after a frame.
 *
 * The layout is include/uapi/linux/serial.h: `__u32 flags; __u32 delay_rts_before_send; __u32 delay_rts_after_send;`
 * then a union of `__u32 padding[5]` and the newer address fields (addr_recv, addr_dest, …) — 32 bytes, every
 * field native-endian. The Pis (arm, arm64) and the x86 test machines are little-endian, and the address fields are
 * left zero (no SER_RS485_ADDRB): a 9-bit addressing mode Modbus RTU does not use.
 */

/** TIOCSRS485 / TIOCGRS485 on arm, arm64 and x86 (include/uapi/asm-generic/ioctls.h; alpha, mips, ppc, sparc differ). */
export const TIOCSRS485 = 0x542f;
export const TIOCGRS485 = 0x542e;

/** `flags` bits (include/uapi/linux/serial.h; bit 3 was RTS_BEFORE_SEND, no longer used). */
export const SER_RS485_ENABLED = 1 << 0;
export const SER_RS485_RTS_ON_SEND = 1 << 1;
export const SER_RS485_RTS_AFTER_SEND = 1 << 2;
export const SER_RS485_RX_DURING_TX = 1 << 4;

/** sizeof(struct serial_rs485). */
export const SERIAL_RS485_SIZE = 32;

/**
 * serial_core clamps both delays to RS485_MAX_RTS_DELAY, 100 ms (drivers/tty/serial/serial_core.c): a longer one
 * is refused at config load rather than silently shortened by the kernel.
 */
export const MAX_RTS_DELAY_US = 100_000;

export interface KernelRs485 {
  /** RTS high while sending (the usual DE wiring); false: RTS low while sending, high after. */
  rtsOnSend: boolean;
  /** Microseconds between RTS asserted and the first byte, and between the last byte and RTS released. */
  delayBeforeSendUs: number;
  delayAfterSendUs: number;
}

/**
 * The kernel's delays are whole milliseconds: a delay in microseconds is rounded UP (a transceiver that needs 50 µs
 * to turn on gets 1 ms, never 0 — too long costs a millisecond of line time, too short costs the frame's first byte).
 */
export const usToKernelMs = (us: number): number => Math.ceil(Math.max(0, us) / 1000);

/** `struct serial_rs485` with RS-485 on, as the TIOCSRS485 ioctl reads it (little-endian). */
export function serialRs485Bytes(options: KernelRs485): Uint8Array {
  const bytes = new Uint8Array(SERIAL_RS485_SIZE);
  const view = new DataView(bytes.buffer);
  // RTS_ON_SEND and RTS_AFTER_SEND are one setting: the kernel wants exactly one of them (serial_core warns and
  // picks RTS_ON_SEND when both or neither are given).
  const flags = SER_RS485_ENABLED | (options.rtsOnSend ? SER_RS485_RTS_ON_SEND : SER_RS485_RTS_AFTER_SEND);
  view.setUint32(0, flags >>> 0, true);
  view.setUint32(4, usToKernelMs(options.delayBeforeSendUs), true);
  view.setUint32(8, usToKernelMs(options.delayAfterSendUs), true);
  return bytes;
}

/**
 * When the DE pin may fall after writing `bytes` at `writeStartMs`: not before the last byte's stop bit has left
 * the wire (`bytes` characters at `charMs` each from the write), and not before the driver said the UART's buffer
 * drained (`drainedAtMs`). A pty drains at once; a real UART holds the frame in its FIFO for the whole wire time, so
 * either bound alone can be early.
 */
export function deReleaseAt(writeStartMs: number, bytes: number, charMs: number, drainedAtMs: number): number {
  return Math.max(drainedAtMs, writeStartMs + bytes * charMs);
}
