/**
 * What every test of the update hand-over starts from: a temp directory with an empty data_dir and a RAUC
 * system.conf naming a test board (the gateway offers updates only where that file exists), and bundles that
 * pass the gateway's own check (a squashfs magic, then noise).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface UpdateSandbox {
  dir: string;
  dataDir: string;
  systemConf: string;
}

export async function updateSandbox(prefix: string): Promise<UpdateSandbox> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const dataDir = path.join(dir, 'data');
  const systemConf = path.join(dir, 'system.conf');
  await mkdir(dataDir);
  await writeFile(systemConf, '[system]\ncompatible=shadowgate-test\n');
  return { dir, dataDir, systemConf };
}

export const fakeBundle = (size: number): Buffer => Buffer.concat([Buffer.from('hsqs', 'latin1'), randomBytes(size - 4)]);
