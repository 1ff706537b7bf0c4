/**
 * `YYYY-MM-DD HH:MM:SS` in the gateway's local time zone: the one formatter for REST, MQTT payloads and
 * history (upstream's Go layout "2006-01-02 15:04:05"). Many values share the second of their update, so
 * the last text is cached, keyed on the zone too (Node honours a TZ change at run time; tests switch it).
 */
const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

let cachedSecond = Number.NaN;
let cachedTz: string | undefined;
let cachedText = '';

export function localTimeText(ms: number): string {
  const second = Math.floor(ms / 1000);
  const tz = process.env.TZ;
  if (second === cachedSecond && tz === cachedTz) return cachedText;
  const d = new Date(ms);
  cachedText = `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  cachedSecond = second;
  cachedTz = tz;
  return cachedText;
}

/** The same with milliseconds: `YYYY-MM-DD HH:MM:SS.mmm`. */
export const localTimeTextMs = (ms: number): string => `${localTimeText(ms)}.${pad(((ms % 1000) + 1000) % 1000, 3)}`;
