/**
 * The Raspberry Pi 40-pin header (J8, called "P1" since the first boards) and pin-spec parsing.
 * Every board we support (3B/3B+, 4B, 5, Zero 2 W, CM4 IO board) has this same layout; the board
 * files in board/boards/ repeat it so each is self-contained, and a test checks they agree with this.
 */

/** Physical header pin → BCM number, or the name of a supply pin. */
export type HeaderMap = Readonly<Record<string, number | string>>;

export const PI_40PIN_HEADER: HeaderMap = {
  1: '3V3', 2: '5V', 3: 2, 4: '5V', 5: 3, 6: 'GND', 7: 4, 8: 14, 9: 'GND', 10: 15,
  11: 17, 12: 18, 13: 27, 14: 'GND', 15: 22, 16: 23, 17: '3V3', 18: 24, 19: 10, 20: 'GND',
  21: 9, 22: 25, 23: 11, 24: 8, 25: 'GND', 26: 7, 27: 0, 28: 1, 29: 5, 30: 'GND',
  31: 6, 32: 12, 33: 13, 34: 'GND', 35: 19, 36: 16, 37: 26, 38: 20, 39: 'GND', 40: 21,
};

/** BCM numbers a pin spec may name when no board narrows it (the schema's 0..53). */
export const MAX_BCM = 53;

const HEADER_RE = /^(?:P1|J8)-(\d{1,2})$/i;
const BCM_RE = /^(?:GPIO|BCM)(\d{1,2})$/i;

export type PinResult = { bcm: number } | { error: string };

/**
 * A point's `pin` as BCM number: an integer is BCM; "P1-11" / "J8-11" is header pin 11; "GPIO17" /
 * "BCM17" is BCM 17. A bare numeric string is refused because it is ambiguous (BCM or header?).
 */
export function parsePin(spec: unknown, header: HeaderMap = PI_40PIN_HEADER, maxBcm = MAX_BCM): PinResult {
  if (typeof spec === 'number') {
    if (!Number.isInteger(spec) || spec < 0 || spec > maxBcm) return { error: `pin ${spec} is out of range (BCM 0..${maxBcm})` };
    return { bcm: spec };
  }
  if (typeof spec !== 'string') return { error: 'pin must be a BCM number or a header pin like "P1-11"' };
  const text = spec.trim();
  const headerMatch = HEADER_RE.exec(text);
  if (headerMatch) {
    const entry = header[Number(headerMatch[1])];
    if (entry === undefined) return { error: `unknown header pin "${spec}" (the header has pins P1-1..P1-40)` };
    if (typeof entry === 'string') return { error: `header pin "${spec}" is ${entry}, not a GPIO` };
    return { bcm: entry };
  }
  const bcmMatch = BCM_RE.exec(text);
  if (bcmMatch) return parsePin(Number(bcmMatch[1]), header, maxBcm);
  if (/^\d+$/.test(text)) {
    return { error: `pin "${spec}" is ambiguous: write ${text} for BCM ${text} or "P1-${text}" for header pin ${text}` };
  }
  return { error: `unknown pin name "${spec}" (use a BCM number, "P1-11" or "GPIO17")` };
}

/** Header pin label for messages ("BCM 17 (P1-11)"); pins not on the header print as "BCM 40". */
export function describePin(bcm: number, header: HeaderMap = PI_40PIN_HEADER): string {
  const physical = Object.entries(header).find(([, v]) => v === bcm)?.[0];
  return physical ? `BCM ${bcm} (P1-${physical})` : `BCM ${bcm}`;
}
