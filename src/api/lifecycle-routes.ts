/**
 * Backup, restore, factory reset and A/B system updates (docs/rest.md, docs/deploy.md). All changes need the
 * write scope: a backup holds the configuration's secrets, a restore, reset or update replaces everything. The
 * backup is the response itself (`application/gzip`, an attachment); a restore or an update bundle is the
 * request body itself, as sent by `curl --data-binary @file` or the console, read as it arrives.
 */
import type { IncomingMessage } from 'node:http';
import { badRequest } from '../core/errors.js';
import type { ApiRequest, LifecycleService, RouteKit, UpdateService } from './context.js';
import { HttpError, okEnvelope, sendEnvelope } from './envelope.js';
import { longUpload } from './long-upload.js';

/** Largest backup file taken (history is capped by history.max_disk, 512 MB by default). */
export const MAX_RESTORE_BYTES = 4 * 1024 ** 3;
/** Largest update bundle taken before the free space of data_dir is even looked at (which usually limits first). */
export const MAX_BUNDLE_BYTES = 4 * 1024 ** 3;

const flag = (req: ApiRequest, name: string): boolean => {
  const v = req.query[name];
  if (v === undefined || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw badRequest(`${name} must be true or false, not "${String(v)}"`);
};

/** The body as it arrives, refused past the limit (a chunked upload has no Content-Length to refuse up front). */
async function* capped(req: AsyncIterable<Buffer>, max: number): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > max) throw new HttpError(413, `request body too large: limit is ${max} bytes`);
    yield chunk;
  }
}

/**
 * A file sent as the body (`what`: how it should be sent): a form or JSON is refused before a byte is read;
 * the body is read as it arrives, without the server's limit on a whole request's time (long-upload.ts).
 */
function fileBody(req: ApiRequest, max: number, what: string): AsyncGenerator<Buffer> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type === 'application/x-www-form-urlencoded' || type.startsWith('multipart/')) {
    throw badRequest(`send ${what} as the body, not ${type}`);
  }
  return capped(longUpload(req), max);
}

const declaredSize = (req: IncomingMessage): number | undefined => {
  const len = Number(req.headers['content-length']);
  return req.headers['content-length'] !== undefined && Number.isFinite(len) ? len : undefined;
};

export function mountLifecycleRoutes(lifecycle: LifecycleService, kit: RouteKit): void {
  kit.route('GET', '/system/lifecycle', 'read', () => lifecycle.info());
  kit.stream('GET', '/system/backup', 'admin', 0, async (req, res) => {
    await lifecycle.backup(res, { history: flag(req, 'history') });
  });
  kit.stream('POST', '/system/restore', 'write', MAX_RESTORE_BYTES, async (req) =>
    lifecycle.restore(fileBody(req, MAX_RESTORE_BYTES, 'the backup file itself (Content-Type: application/gzip)')));
  kit.route('POST', '/system/reset', 'write', (_req, body) => lifecycle.reset(body?.['confirm']));
}

export function mountUpdateRoutes(updates: UpdateService, kit: RouteKit): void {
  kit.route('GET', '/system/update', 'read', () => updates.status());
  kit.stream('POST', '/system/update', 'write', MAX_BUNDLE_BYTES, async (req, res) => {
    const body = fileBody(req, MAX_BUNDLE_BYTES, 'the .raucb file itself (Content-Type: application/octet-stream)');
    const data = await updates.install(body, declaredSize(req));
    // Accepted: the system's update service takes it from here (GET /system/update follows it).
    sendEnvelope(req, res, 202, okEnvelope(data));
  });
}
