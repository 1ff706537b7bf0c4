/** Reads a backup file in tests: its entries in order, with their text (JSON entries) — through tar-stream, as the gateway does. */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract } from 'tar-stream';

export async function listBackup(file: Buffer): Promise<{ name: string; size: number; text: string }[]> {
  const extract = tarExtract();
  const feeding = pipeline(Readable.from([file]), createGunzip(), extract);
  const out: { name: string; size: number; text: string }[] = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const c of entry) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    out.push({ name: entry.header.name, size: body.length, text: entry.header.name.endsWith('.json') ? body.toString('utf8') : body.toString('latin1') });
  }
  await feeding;
  return out;
}

/** A gzip'd tar of the given entries, in order (to make foreign or altered backups). */
export async function makeTarGz(entries: { name: string; data: Buffer | string }[]): Promise<Buffer> {
  const { pack: tarPack } = await import('tar-stream');
  const { gzipSync } = await import('node:zlib');
  const pack = tarPack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of pack) chunks.push(c as Buffer);
  })();
  for (const e of entries) await new Promise<void>((resolve, reject) => pack.entry({ name: e.name }, e.data, (err) => (err ? reject(err) : resolve())));
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}
