/**
 * How the shipped systemd unit starts the gateway, read from systemd/shadowgate.service so benches and the
 * soak run what a Pi runs: the node flags of ExecStart (heap caps) and the environment that changes how the
 * process behaves (glibc's allocator settings, NODE_ENV). The unit's paths (SHADOWGATE_CONFIG, _DATA_DIR) are
 * left out: each run brings its own.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const UNIT = path.resolve('systemd/shadowgate.service');
const unitText = (): string => readFileSync(UNIT, 'utf8');

/** The node flags of the unit's ExecStart (`/usr/bin/node FLAGS… /opt/shadowgate/shadowgate.mjs run`). */
export function unitNodeFlags(text = unitText()): string[] {
  const exec = /^ExecStart=(.*)$/m.exec(text)?.[1]?.trim().split(/\s+/) ?? [];
  const entry = exec.findIndex((a) => a.endsWith('.mjs') || a.endsWith('.js'));
  if (!exec[0]?.endsWith('node') || entry < 0) throw new Error(`cannot read the node flags of ${UNIT}: ExecStart=${exec.join(' ')}`);
  return exec.slice(1, entry);
}

/** The unit's Environment= settings except the gateway's own paths (SHADOWGATE_*). */
export function unitEnvironment(text = unitText()): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/^Environment=(\w+)=(.*)$/gm)) if (!m[1]!.startsWith('SHADOWGATE_')) env[m[1]!] = m[2]!.trim();
  return env;
}
