/** Duration and size text, parsed by one helper for the whole config (`500ms`, `5m`, `1h30m`, `14d`, `64MB`). */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART_RE = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds for a duration text; throws on anything else (a bare number is refused: unit is ambiguous). */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (!DURATION_RE.test(s)) throw new Error(`invalid duration "${text}" (examples: 500ms, 30s, 5m, 1h30m, 14d)`);
  let ms = 0;
  for (const [, n, unit] of s.matchAll(PART_RE)) ms += Number(n) * (UNIT_MS[unit!] ?? 0);
  return Math.round(ms);
}

export const isDuration = (text: string): boolean => DURATION_RE.test(text.trim());

/**
 * Go's time.Duration.String() for whole milliseconds, as the upstream gateway prints a device's ttl:
 * `0s`, `500ms`, `30s`, `5m0s`, `1h30m0s`, `24h0m0s`, `1.5s`.
 */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(Math.round(ms));
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const sec = rest / 1000;
  const secText = `${Number.isInteger(sec) ? sec : sec.toFixed(3).replace(/0+$/, '')}s`;
  if (h > 0) return `${sign}${h}h${m}m${secText}`;
  if (m > 0) return `${sign}${m}m${secText}`;
  return `${sign}${secText}`;
}

const SIZE_UNIT: Record<string, number> = {
  b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3,
};
const SIZE_RE = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|kib|mib|gib)$/i;

/** Bytes for a size text; KB/MB/GB are binary (1024-based), as disk tools on the Pi print them. */
export function parseSize(text: string): number {
  const match = SIZE_RE.exec(text.trim());
  if (!match) throw new Error(`invalid size "${text}" (examples: 512KB, 64MB, 1GB)`);
  return Math.round(Number(match[1]) * (SIZE_UNIT[match[2]!.toLowerCase()] ?? 1));
}

export const isSize = (text: string): boolean => SIZE_RE.test(text.trim());
