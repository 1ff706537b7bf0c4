/** Modbus exception codes (Modbus Application Protocol v1.1b3 §7) and the clear texts users see. */

const EXCEPTION_TEXT: Record<number, string> = {
  1: 'illegal function',
  2: 'illegal data address',
  3: 'illegal data value',
  4: 'slave device failure',
  5: 'acknowledge',
  6: 'slave device busy',
  8: 'memory parity error',
  10: 'gateway path unavailable',
  11: 'gateway target device failed to respond',
};

export function exceptionText(code: number): string {
  return EXCEPTION_TEXT[code] ?? 'unknown exception';
}

/** `modbus exception 2 (illegal data address) from unit 1` — the message format the API shows. */
export function exceptionMessage(code: number, unitId: number): string {
  return `modbus exception ${code} (${exceptionText(code)}) from unit ${unitId}`;
}

/**
 * Codes after which the same request is worth repeating later (busy/acknowledge), as opposed to
 * codes that say the request itself is wrong for this device (1, 2, 3) and will fail every time.
 */
export const isTransientException = (code: number): boolean => code === 5 || code === 6 || code === 11;
