/**
 * The web console's files (built by `make build` into dist/console/, see scripts/build-console.mjs) served
 * at `/` on the REST port. They are read into memory once at start — a few tens of kilobytes — and sent
 * precompressed when the browser accepts gzip, with an ETag so a reload costs a 304.
 */
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { ApiApp } from './context.js';

const TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

interface File {
  plain: Buffer;
  gz: Buffer;
  etag: string;
  type: string;
}

/**
 * Where the built console is: dist/console beside dist/api (built tree), console/ beside the release
 * bundle (make dist), or the repo's dist/console when running from src/ (tests, tsx).
 */
export async function findConsoleDir(): Promise<string | undefined> {
  for (const rel of ['../console/', './console/', '../../dist/console/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    // The built app.js marks a built console (src/console/ holds the sources, not a build).
    if (await access(`${dir}app.js`).then(() => true, () => false)) return dir;
  }
  return undefined;
}

export async function loadConsole(dir: string): Promise<Map<string, File>> {
  const files = new Map<string, File>();
  for (const [name, type] of Object.entries(TYPES)) {
    const plain = await readFile(`${dir}${name}`);
    const gz = await readFile(`${dir}${name}.gz`).catch(() => plain);
    files.set(name, { plain, gz, type, etag: `"${createHash('sha256').update(plain).digest('base64url').slice(0, 16)}"` });
  }
  return files;
}

function send(file: File, req: IncomingMessage, res: ServerResponse, cache: string): void {
  const headers: Record<string, string | number> = { 'Content-Type': file.type, ETag: file.etag, 'Cache-Control': cache, Vary: 'Accept-Encoding' };
  if (req.headers['if-none-match'] === file.etag) {
    res.writeHead(304, headers).end();
    return;
  }
  const gzip = file.gz !== file.plain && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? file.gz : file.plain;
  if (gzip) headers['Content-Encoding'] = 'gzip';
  headers['Content-Length'] = body.length;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** Mounts `/`, `/index.html`, `/app.js` and `/app.css`. The page revalidates; its assets too (same names each build). */
export function mountConsole(app: ApiApp, files: Map<string, File>): void {
  const route = (path: string, name: string): void => {
    const file = files.get(name)!;
    const handler = (req: IncomingMessage, res: ServerResponse): void => send(file, req, res, 'no-cache');
    app.get(path, handler);
    app.head(path, handler);
  };
  route('/', 'index.html');
  route('/index.html', 'index.html');
  route('/app.js', 'app.js');
  route('/app.css', 'app.css');
}
