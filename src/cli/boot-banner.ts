/**
 * What `boot-config` tells the person at the device: the console banner (an agetty issue file, shown above
 * the login prompt) and the same summary for stdout, which goes to the journal and so never carries the token.
 */

export interface BootFacts {
  version: string;
  /** Undefined when no config could be applied (the banner then says only why). */
  gatewayId?: string;
  port?: number;
  /** Host name for the mDNS address, when known. */
  hostname?: string;
  /** The API token, only when boot-config generated it. */
  token?: string;
  tokenKind: 'generated' | 'config' | 'none';
  tokenFile: string;
  message: string;
  problems: readonly string[];
  /** Where the full status is (named when the banner leaves problems out). */
  statusFile: string;
}

// The console has about 25 lines above the prompt; the status file has the full list.
const CONSOLE_PROBLEMS = 5;

/**
 * agetty expands backslash sequences in issue files (\4 = the IPv4 address, \n = the node name, …) and prints
 * any other escaped character as itself, so user text is escaped by doubling each backslash.
 */
export function issueText(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/[\u0000-\u001f\u007f]/g, '?');
}

function tokenLines(facts: BootFacts, forConsole: boolean): string[] {
  if (facts.tokenKind === 'generated' && forConsole && facts.token) {
    // The console is physical access to the device, which owns the token anyway; the journal may leave it.
    return [`API token: ${issueText(facts.token)}`, `           (stored in ${issueText(facts.tokenFile)})`];
  }
  if (facts.tokenKind === 'generated') return [`API token: generated; shown on the console, stored in ${facts.tokenFile}`];
  return [facts.tokenKind === 'config' ? 'API token: set in the config (http.auth.tokens)' : 'API token: none (the API is open)'];
}

function lines(facts: BootFacts, forConsole: boolean): string[] {
  const esc = forConsole ? issueText : (s: string): string => s;
  const api = `:${facts.port}/api/v1`;
  const mdns = facts.hostname ? `http://${esc(facts.hostname)}.local${api}` : undefined;
  const out = [`shadowgate ${esc(facts.version)}${facts.gatewayId === undefined ? '' : `, gateway "${esc(facts.gatewayId)}"`}`];
  // Without a port nothing runs, so there is no address to show.
  if (facts.port !== undefined && forConsole) {
    out.push(`REST API: http://\\4${api}`);
    if (mdns) out.push(`          ${mdns}`);
  } else if (facts.port !== undefined) {
    out.push(`REST API: port ${facts.port}${mdns ? `, ${mdns}` : ''}`);
  }
  if (facts.port !== undefined) out.push(...tokenLines(facts, forConsole));
  out.push(`Config: ${esc(facts.message)}`);
  const shown = forConsole ? facts.problems.slice(0, CONSOLE_PROBLEMS) : facts.problems;
  out.push(...shown.map((p) => `  ${esc(p)}`));
  if (shown.length < facts.problems.length) out.push(`  ... and ${facts.problems.length - shown.length} more in ${esc(facts.statusFile)}`);
  return out;
}

/** /run/issue.d/50-shadowgate.issue (with the token when generated). */
export function renderIssue(facts: BootFacts): string {
  return `${lines(facts, true).join('\n')}\n\n`;
}

/** The same facts for stdout, without the token. */
export function renderSummary(facts: BootFacts): string[] {
  return lines(facts, false);
}
