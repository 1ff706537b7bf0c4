/** export.shadow of the seed: every `interval`, the whole shadow (REST shape) to the mqtt/http/file targets. */
import { GatewayError } from '../core/errors.js';
import type { Logger } from '../util/logger.js';
import type { ShadowExportConfig } from './context.js';
import { FileTarget } from './file-target.js';
import { HttpTarget } from './http-target.js';
import { localTime } from './topics.js';

export interface ShadowExportDeps {
  gatewayId: string;
  shadowJson(): unknown;
  publishMqtt(payload: string): void;
  now(): number;
  log: Logger;
  /** http retry backoff base, ms (tests shorten it) */
  httpBackoff?: number;
}

export interface ShadowExport {
  /** Runs one export now (also what the timer calls). */
  exportNow(): void;
  stats(): Record<string, unknown>;
  stop(): Promise<void>;
}

/** Every problem of the slice as `path: message`; throws CONFIG_INVALID listing them all. */
export function validateShadowExport(cfg: ShadowExportConfig, mqttEnabled: boolean): void {
  if (!cfg.enable) return;
  const problems: string[] = [];
  const p = 'export.shadow';
  if (cfg.format !== 'json') problems.push(`${p}.format: only "json" is supported`);
  if (!(cfg.interval > 0)) problems.push(`${p}.interval: must be a positive duration`);
  for (const t of cfg.targets) {
    if (t !== 'mqtt' && t !== 'http' && t !== 'file') problems.push(`${p}.targets: unknown target "${String(t)}"`);
  }
  if (cfg.targets.includes('mqtt') && !mqttEnabled) problems.push(`${p}.targets: "mqtt" needs mqtt.enable (or mqtt.bridge)`);
  if (cfg.targets.includes('http')) {
    if (!cfg.http?.url) problems.push(`${p}.http.url: required by target "http"`);
    else {
      let ok = false;
      try {
        ok = ['http:', 'https:'].includes(new URL(cfg.http.url).protocol);
      } catch {
        ok = false;
      }
      if (!ok) problems.push(`${p}.http.url: "${cfg.http.url}" is not an http(s) URL`);
    }
    if (cfg.http && !(cfg.http.timeout > 0)) problems.push(`${p}.http.timeout: must be a positive duration`);
    if (cfg.http && !(cfg.http.queue_max >= 1)) problems.push(`${p}.http.queue_max: must be at least 1`);
  }
  if (cfg.targets.includes('file')) {
    if (!cfg.file?.path) problems.push(`${p}.file.path: required by target "file"`);
    if (cfg.file && cfg.file.mode !== 'snapshot' && cfg.file.mode !== 'append') {
      problems.push(`${p}.file.mode: must be "snapshot" or "append"`);
    }
    if (cfg.file?.mode === 'append' && !(cfg.file.max_size > 0)) problems.push(`${p}.file.max_size: must be a positive size`);
  }
  if (problems.length) throw new GatewayError('CONFIG_INVALID', problems.join('\n'));
}

export async function startShadowExport(cfg: ShadowExportConfig, deps: ShadowExportDeps): Promise<ShadowExport> {
  validateShadowExport(cfg, true);
  const http = cfg.enable && cfg.targets.includes('http') && cfg.http
    ? new HttpTarget({ url: cfg.http.url, timeout: cfg.http.timeout, queueMax: cfg.http.queue_max, log: deps.log,
        backoff: deps.httpBackoff })
    : null;
  const file = cfg.enable && cfg.targets.includes('file') && cfg.file
    ? new FileTarget({ path: cfg.file.path, mode: cfg.file.mode, maxSize: cfg.file.max_size, log: deps.log })
    : null;
  const mqtt = cfg.enable && cfg.targets.includes('mqtt');
  let exports = 0;

  const exportNow = (): void => {
    const ts = deps.now();
    // Wrapped so a consumer of the http/file targets knows which gateway and when; `devices` is GET /shadow/all's data.
    const body = JSON.stringify({ gateway: deps.gatewayId, time: localTime(ts), ts, devices: deps.shadowJson() });
    exports++;
    if (mqtt) deps.publishMqtt(body);
    http?.push(body);
    file?.push(body);
  };
  const timer = cfg.enable ? setInterval(() => {
    try {
      exportNow();
    } catch (err) {
      deps.log.error({ err }, 'shadow export failed');
    }
  }, cfg.interval) : null;

  return {
    exportNow,
    stats: () => ({ exports, http: http?.stats() ?? null, file: file?.stats() ?? null }),
    async stop() {
      if (timer) clearInterval(timer);
      http?.stop();
      await file?.flush();
    },
  };
}
