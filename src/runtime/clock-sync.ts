/**
 * Whether the wall clock can be trusted (DESIGN §3 rule 11): systemd-timesyncd creates
 * /run/systemd/timesync/synchronized once it has synchronized the clock (and keeps it until shutdown). On a
 * system without timesyncd (a dev box, another init) the directory is missing and nothing can be said:
 * null, taken as trusted (such systems keep their time with an RTC or another daemon).
 */
import { access } from 'node:fs/promises';
import path from 'node:path';

export const TIMESYNC_FLAG = '/run/systemd/timesync/synchronized';

const exists = (file: string): Promise<boolean> => access(file).then(() => true, () => false);

export async function clockSynchronized(flag = process.env.SHADOWGATE_TIMESYNC_FLAG || TIMESYNC_FLAG): Promise<boolean | null> {
  if (await exists(flag)) return true;
  return (await exists(path.dirname(flag))) ? false : null;
}
