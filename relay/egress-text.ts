// What the phone sees of an egress request — the agent tried a host nobody listed, and the egress
// proxy asks whether to let it through (docs/egress.md) — and of its answers. Pure.
import { grantEntry } from '../common/egress/hosts.ts';
import { LIMITS, type Decision, type Pending } from '../common/session/schema.ts';
import { cutShown, showHidden } from './chat/shown.ts';
import { toolDetail } from './chat/tool-detail.ts';

/** The tool call running when the agent tried the host: context only, one line of at most this. */
export const EGRESS_TOOL_CHARS = 120;
const TOOL_NAME_CHARS = 64;
/** HTTPS: shown as the host alone; any other port is named (a grant covers exactly that port). */
const HTTPS_PORT = 443;

/** Hidden characters, newlines and tabs shown as code points; cut at `max` with an ellipsis. */
function oneLine(text: string, max: number): string {
  const escaped = showHidden(text).replace(/\n/g, '<U+000A>').replace(/\t/g, '<U+0009>');
  const { text: kept, cut } = cutShown(escaped, max);
  return cut ? `${kept}…` : kept;
}

/** "pypi.org" (443), "pypi.org:80", "[2001:db8::1]:8080": as safe to show as anything the agent wrote. */
export function destination(pending: Pending): string {
  const host = oneLine(pending.host ?? 'an unnamed host', LIMITS.egressHostChars);
  return pending.port === undefined || pending.port === HTTPS_PORT ? host : grantEntry(host, pending.port);
}

/**
 * " (for `pip install foo`)", or nothing when no tool call was running. A Bash command as a tool request
 * shows it; another tool as its name and compact JSON (its lines stay one: context, not the request).
 */
function forTool(pending: Pending): string {
  if (!pending.tool) return '';
  const bash = pending.tool === 'Bash' && toolDetail(pending);
  const input = pending.input ? `: ${pending.input}` : '';
  const call = bash || `${oneLine(pending.tool, TOOL_NAME_CHARS)}${input}`;
  return ` (for \`${oneLine(call, EGRESS_TOOL_CHARS)}\`)`;
}

export const egressReplies =
  'Reply *allow* (this connection only), *allow session* (for this session), ' +
  '*allow always* (for this repository, later commands too) or *deny <reason>*.';

/** The request as first sent; `expires`: "(expires in 30 min)". */
export const egressPending = (pending: Pending, expires: string) =>
  `🌐 The agent wants to reach ${destination(pending)}${forTool(pending)}.\n${egressReplies} ${expires}`;

/** The reminder of how to answer, when the phone wrote something else. */
export const egressInstructions = (pending: Pending) =>
  `Waiting for your decision on ${destination(pending)}: *allow* (once), *allow session*, ` +
  '*allow always* (this repository) or *deny <reason>*.';

/** What an allow granted, repeated in the next message. */
export function egressAllowed(shown: string | undefined, scope: Decision['scope']): string {
  const what = shown ?? 'the host';
  if (scope === 'repository') return `Allowed ${what} for this repository, later commands too.`;
  return `Allowed ${what} ${scope === 'session' ? 'for the rest of this session' : 'once'}.`;
}

/** The Session ended with the question about a host open. */
export const egressTimedOut = (pending: Pending) =>
  `⌛ No answer about ${destination(pending)} in time, so the session stopped. ` +
  'Your changes are kept on the workspace; send a new command to continue from them.';
