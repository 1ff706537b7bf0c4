/** Time parameters as users type them, and the local time text the REST API prints. */
import { localTimeTextMs } from '../../util/local-time.js';

const LOCAL_RE = /^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;
const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$/i;
const EPOCH_RE = /^\d{1,15}$/;

/**
 * Epoch ms for `YYYY-MM-DD HH:MM:SS[.mmm]` (local, as the REST API prints times; date alone = local
 * midnight), ISO 8601 (`2024-05-01T10:00:00Z`, offset optional; without one it is local), or epoch ms.
 * Returns null when the text is none of them.
 */
export function parseTimeText(text: string): number | null {
  let s = text.trim();
  if (EPOCH_RE.test(s)) return Number(s);
  const m = LOCAL_RE.exec(s);
  if (m) {
    const [y, mo, d, h = '0', mi = '0', sec = '0', ms = '0'] = m.slice(1) as string[];
    const date = new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec), Number(ms.padEnd(3, '0')));
    // Date rolls 2024-02-31 over to March; refuse instead of answering for a day nobody asked about.
    if (date.getFullYear() !== Number(y) || date.getMonth() !== Number(mo) - 1 || date.getDate() !== Number(d)
      || date.getHours() !== Number(h) || date.getMinutes() !== Number(mi) || date.getSeconds() !== Number(sec)) return null;
    return date.getTime();
  }
  // An unencoded `+02:00` in a query string arrives as ` 02:00`.
  s = s.replace(/^(\S+T\S+) (\d{2}:?\d{2})$/, '$1+$2');
  if (!ISO_RE.test(s)) return null;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : null;
}

/** `YYYY-MM-DD HH:MM:SS.mmm` in the gateway's local time zone. */
export const formatLocalMs = localTimeTextMs;
