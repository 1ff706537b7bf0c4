/**
 * `GET /api/v1/homeassistant`: what a user needs to connect Home Assistant — the broker address and login to
 * give HA, whether anonymous clients are allowed, the discovery prefix, whether HA was seen (its birth) and how
 * many configs went out, and the bridge when HA sits on its own broker. A read: user names, never hashes;
 * the bridge URL without its credentials.
 */
import type { GatewayConfig } from '../config/types.js';
import type { RouteKit } from './context.js';
import { formatLocalTime } from './rest-shape.js';

export interface HomeAssistantDeps {
  config: Pick<GatewayConfig, 'mqtt'>;
  /** The MQTT part's stats (broker, exporter, bridge), as /health/shadow shows them. */
  mqttStats(): Record<string, unknown>;
  mqttPort(): number;
  wsPort(): number;
  /** The address other machines reach this host by (a wildcard listen address resolved). */
  address(host: string): string;
}

interface Seen { births: number; lastBirthAt: number | null; upstreamBirths: number; configsSent: number; upstreamConfigsSent: number }

/** `mqtt://user:pass@host:port/` → `mqtt://host:port/`: a read must not hand out the bridge's password. */
const withoutCredentials = (url: string): string => {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
};

export function homeAssistantStatus(deps: HomeAssistantDeps): Record<string, unknown> {
  const { mqtt } = deps.config;
  const stats = deps.mqttStats();
  const seen = (stats.exporter as { homeassistant?: Seen } | null)?.homeassistant;
  const bridge = stats.bridge as { connected?: boolean; discoveryForwarded?: number } | null;
  // On with the broker, or with the broker off and a bridge carrying the configs upstream.
  const discovery = mqtt.homeassistant.enable && (mqtt.enable || !!mqtt.bridge);
  const brokerStats = stats.broker as { refusedPublishes?: number } | null;
  const writers = mqtt.users.filter((u) => u.can_write).map((u) => u.username);
  return {
    discovery,
    prefix: mqtt.homeassistant.prefix,
    broker: {
      enabled: mqtt.enable,
      host: deps.address(mqtt.host),
      port: deps.mqttPort(),
      wsPort: deps.wsPort(),
      anonymousAllowed: mqtt.allow_anonymous,
      users: mqtt.users.map((u) => ({ username: u.username, canWrite: u.can_write })),
      // What to type into HA's MQTT integration: switches and numbers need a user that may write.
      login: writers.length > 0
        ? `user ${writers[0]} (may write: switches, numbers and selects work)`
        : mqtt.allow_anonymous
          ? 'none (anonymous: HA reads every entity; to switch and set values, add an mqtt.users entry with can_write)'
          : 'an mqtt.users entry (anonymous clients are refused)',
      // Publishes the ACL refused (HA's switch commands under a login that may not write, among them): dropped
      // without an answer HA shows, so the console says it here.
      refusedPublishes: brokerStats?.refusedPublishes ?? 0,
    },
    seen: {
      haSeen: (seen?.births ?? 0) > 0,
      births: seen?.births ?? 0,
      lastBirthAt: seen?.lastBirthAt ? formatLocalTime(seen.lastBirthAt) : null,
      lastBirthTs: seen?.lastBirthAt ?? null,
      configsSent: seen?.configsSent ?? 0,
    },
    bridge: mqtt.bridge
      ? {
          url: withoutCredentials(mqtt.bridge.url),
          topicPrefix: mqtt.bridge.topic_prefix,
          connected: bridge?.connected ?? false,
          haBirthsUpstream: seen?.upstreamBirths ?? 0,
          configsSent: seen?.upstreamConfigsSent ?? 0,
        }
      : null,
  };
}

export function mountHomeAssistant(kit: RouteKit, deps: HomeAssistantDeps): void {
  kit.route('GET', '/homeassistant', 'read', () => homeAssistantStatus(deps));
}
