/**
 * Backup, restore and factory reset (docs/rest.md, docs/deploy.md). All need the write scope: a backup holds
 * the configuration's secrets, a restore or reset replaces everything. The backup is the response itself
 * (`application/gzip`, an attachment); restore takes the file as the request body, as sent by
 * `curl --data-binary @file` or the console.
 */
import { badRequest } from '../core/errors.js';
import type { ApiRequest, LifecycleService, RouteKit } from './context.js';
import { HttpError } from './envelope.js';

/** Largest backup file taken (history is capped by history.max_disk, 512 MB by default). */
export const MAX_RESTORE_BYTES = 4 * 1024 ** 3;

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

export function mountLifecycleRoutes(lifecycle: LifecycleService, kit: RouteKit): void {
  kit.route('GET', '/system/lifecycle', 'read', () => lifecycle.info());
  kit.stream('GET', '/system/backup', 'admin', 0, async (req, res) => {
    await lifecycle.backup(res, { history: flag(req, 'history') });
  });
  kit.stream('POST', '/system/restore', 'write', MAX_RESTORE_BYTES, async (req) => {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type === 'application/json' || type === 'application/x-www-form-urlencoded' || type.startsWith('multipart/')) {
      throw badRequest(`send the backup file itself as the body (Content-Type: application/gzip), not ${type}`);
    }
    return lifecycle.restore(capped(req, MAX_RESTORE_BYTES));
  });
  kit.route('POST', '/system/reset', 'write', (_req, body) => lifecycle.reset(body?.['confirm']));
}
