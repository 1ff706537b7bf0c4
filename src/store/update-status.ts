/**
 * The A/B system update as the gateway sees it (docs/deploy.md "Updating"). The gateway runs unprivileged and
 * cannot install a system itself: it hands a bundle over in `<data_dir>/update/` (update-handoff.ts) and a root
 * service of the SD image installs it with RAUC, writing its progress to `status.json` there. This file reads
 * that status (never trusting it: the file is another program's) and tells whether A/B updates exist here.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';

/** RAUC's system configuration: present only on the SD image, where the root side runs. */
export const RAUC_SYSTEM_CONF = '/etc/rauc/system.conf';

export const UPDATE_FILES = {
  dir: 'update',
  part: 'bundle.raucb.part',
  bundle: 'bundle.raucb',
  request: 'request.json',
  status: 'status.json',
} as const;

export const UPDATE_STATES = ['idle', 'checking', 'installing', 'rebooting', 'trial', 'good', 'failed', 'refused'] as const;
export type UpdateState = (typeof UPDATE_STATES)[number] | 'unknown';

/**
 * While the root side works on a bundle, another is refused. A trial counts: an install then would overwrite
 * the slot the trial falls back to (the root side would drop it with only a log line; refused here, the user
 * sees why).
 */
export const BUSY_STATES: readonly UpdateState[] = ['checking', 'installing', 'rebooting', 'trial'];
/** Where `shadowgate update` stops following: the install is over, one way or the other. */
export const FINAL_STATES: readonly UpdateState[] = ['rebooting', 'refused', 'failed', 'good'];

export interface UpdateStatus {
  state: UpdateState;
  progress: number | null;
  message: string;
  from_version: string | null;
  to_version: string | null;
  slot: 'A' | 'B' | null;
  booted_slot: 'A' | 'B' | null;
  updated_at: string | null;
}

/** What the gateway wrote for the root side (update-handoff.ts). */
export interface UpdateRequest {
  bundle: string;
  size: number;
  sha256: string;
  requested_at: string;
  by: 'rest' | 'cli';
}

export const updateDir = (dataDir: string): string => path.join(dataDir, UPDATE_FILES.dir);

export const updateAvailable = (systemConf: string): Promise<boolean> => access(systemConf).then(() => true, () => false);

export const notAvailableMessage = (systemConf: string): string =>
  `A/B system updates are not available on this system (no ${systemConf}): they come with the shadowgate SD image; ` +
  'a gateway installed with install.sh is updated by running a newer install.sh';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v.slice(0, 500) : null);
const slot = (v: unknown): 'A' | 'B' | null => (v === 'A' || v === 'B' ? v : null);

const blank = (state: UpdateState, message: string): UpdateStatus => ({
  state, progress: null, message, from_version: null, to_version: null, slot: null, booted_slot: null, updated_at: null,
});

/** The status as the root side last wrote it: missing means no update yet, anything unreadable `unknown` with why. */
export async function readStatusFile(dataDir: string): Promise<UpdateStatus> {
  let raw: string;
  try {
    raw = await readFile(path.join(updateDir(dataDir), UPDATE_FILES.status), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return blank('idle', 'no update has been installed on this system');
    return blank('unknown', `the update status could not be read: ${(err as Error).message}`);
  }
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return blank('unknown', `the update status (${UPDATE_FILES.status}) is not JSON`);
  }
  if (!isObj(v)) return blank('unknown', `the update status (${UPDATE_FILES.status}) is not an object`);
  const state = (UPDATE_STATES as readonly unknown[]).includes(v.state) ? (v.state as UpdateState) : 'unknown';
  const progress = typeof v.progress === 'number' && Number.isFinite(v.progress) ? Math.min(100, Math.max(0, Math.round(v.progress))) : null;
  return {
    state, progress,
    message: text(v.message) ?? (state === 'unknown' ? `the update status has an unknown state ${JSON.stringify(v.state)}` : ''),
    from_version: text(v.from_version), to_version: text(v.to_version),
    slot: slot(v.slot), booted_slot: slot(v.booted_slot), updated_at: text(v.updated_at),
  };
}

/** The request still waiting for the root side, if any (it deletes the file first thing). */
export async function readRequest(dataDir: string): Promise<UpdateRequest | undefined> {
  try {
    const v = JSON.parse(await readFile(path.join(updateDir(dataDir), UPDATE_FILES.request), 'utf8')) as unknown;
    if (!isObj(v)) return undefined;
    return { bundle: String(v.bundle), size: Number(v.size), sha256: String(v.sha256), requested_at: String(v.requested_at), by: v.by === 'cli' ? 'cli' : 'rest' };
  } catch {
    return undefined;
  }
}

/**
 * The status, seen from a request made at `since` (ms, wall time) or still waiting: until the root side has
 * written a newer status, the file still tells of the update before, so the state is `checking`. The root side
 * stamps whole seconds: a status of the same second counts as newer.
 */
export async function currentStatus(dataDir: string, since?: number): Promise<UpdateStatus & { request_pending: boolean }> {
  const [status, request] = await Promise.all([readStatusFile(dataDir), readRequest(dataDir)]);
  if (request) {
    const mb = (Number(request.size) / 1048576).toFixed(1);
    return { ...blank('checking', `the bundle (${mb} MB) was handed over and waits for the system's update service`), request_pending: true };
  }
  const written = status.updated_at ? Date.parse(status.updated_at) : NaN;
  // A status without a readable time cannot be placed: shown as it is rather than waited on forever.
  if (since !== undefined && written < Math.floor(since / 1000) * 1000) {
    return { ...blank('checking', 'the system\'s update service took the bundle'), request_pending: false };
  }
  return { ...status, request_pending: false };
}
