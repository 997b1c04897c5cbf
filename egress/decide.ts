// The proxy's one decision about a connection, in two pure steps (docs/egress.md, "The rules"): first on
// the name and port alone, before any lookup (a name the rules refuse is never resolved: no DNS channel),
// then on the addresses of a destination that is allowed, or was just allowed by the phone (blocked
// ranges, the forge's own addresses). First match wins; deny before allow; the address returned is the
// one checked, and the only one the proxy connects to (no second lookup: DNS rebinding).
import { isIP } from 'node:net';
import { entryMatches, type HostEntry } from '../common/egress/hosts.ts';
import { canonicalAddress, type BlockedRanges } from './cidrs.ts';
import { forgeWriteProblem, isForge, isForgeExactly, type ForgeHost, type Parsed, type Target } from './target.ts';

export interface DecisionRules {
  deny: readonly HostEntry[];
  forgeHosts: readonly ForgeHost[];
  blocked: BlockedRanges;
  allow: readonly HostEntry[];
  supervisorAllow: readonly HostEntry[];
  ask: boolean;
}

/** What the agent's Session has beyond the install's list. */
export interface SessionGrants {
  /** TETHER_EGRESS_REPOSITORIES' entries for the Session's repository (the install listed them). */
  additions: readonly HostEntry[];
  /** The repository's grants from the phone (the grants ConfigMap). */
  repository: readonly HostEntry[];
  /** This Session's grants from the phone. */
  session: readonly HostEntry[];
  /** An unused once-grant for exactly this host:port. */
  once: boolean;
  /** The phone denied this host:port for this Session. */
  denied: boolean;
  /** The Session's supervisor stream is open (someone can ask the phone). */
  streamOpen: boolean;
}

/** Nothing beyond the install's list (the supervisor's part, and the start of a Session's). */
export const NO_GRANTS: SessionGrants = {
  additions: [],
  repository: [],
  session: [],
  once: false,
  denied: false,
  streamOpen: false,
};

/** An address (and port, when the forge host named one) a forge host resolves to. */
export interface ForgeAddress {
  address: string;
  port?: number;
}

interface NameInput {
  caller: 'agent' | 'supervisor';
  target: Parsed;
  rules: DecisionRules;
  /** The agent's Session; unused for the supervisor. */
  grants: SessionGrants;
}

export interface DecisionInput extends NameInput {
  /** What the host resolved to (the address itself for an address); empty when it did not resolve. */
  addresses: readonly string[];
  /** The forges' addresses; absent: those of the forge hosts written as addresses. */
  forgeAddresses?: readonly ForgeAddress[];
}

export type AllowedBy = 'forge-read' | 'install' | 'repository-list' | 'repository' | 'session' | 'once' | 'supervisor';

/** Step 1. `exact`: an install entry names the destination itself (not a wildcard): it may lie in a blocked range. */
export type NameDecision =
  | { verdict: 'malformed'; reason: string }
  | { verdict: 'refused'; reason: string }
  | { verdict: 'allowed'; by: AllowedBy; exact: boolean }
  | { verdict: 'ask' };

/** Step 2: where to connect, or why not. `forge`: the addresses are the forge's (another name for it). */
export type AddressDecision =
  { verdict: 'refused'; reason: string } | { verdict: 'connect'; address: string; forge: boolean };

export type Decision =
  | { verdict: 'malformed'; reason: string }
  | { verdict: 'refused'; reason: string }
  | { verdict: 'allowed'; by: AllowedBy; address: string }
  | { verdict: 'ask'; address: string };

const where = (t: Target) => `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
const anyMatch = (list: readonly HostEntry[], t: Target) => list.some((e) => entryMatches(e, t.host, t.port));
const exactMatch = (list: readonly HostEntry[], t: Target) =>
  list.some((e) => !e.wildcard && entryMatches(e, t.host, t.port));

export const REASONS = {
  denied: (t: Target) => `${where(t)} is denied by this install`,
  deniedAddress: (t: Target, address: string) => `${where(t)} resolves to ${address}, denied by this install`,
  forgeTunnel: (t: Target) =>
    `a tunnel to the forge ${where(t)} cannot be checked, so it is refused; the agent has no route to push ` +
    "(pushes go through Tether's review); read the forge over plain http:// instead",
  unresolved: (t: Target) => `${t.host} does not resolve to an address`,
  blocked: (t: Target, address: string) =>
    `${where(t)} resolves to ${address}, in a range this install keeps closed (internal networks)`,
  deniedByPhone: (t: Target) => `${where(t)} was denied from the phone`,
  notListed: (t: Target) => `${where(t)} is not on this install's list`,
  askingOff: (t: Target) => `${where(t)} is not on this install's list, and asking the phone is off`,
  noStream: (t: Target) => `${where(t)} is not on this install's list, and the phone could not be asked`,
  notSupervisorListed: (t: Target) => `${where(t)} is not on the supervisor's list`,
} as const;

/** The forge rule: no tunnel (its path cannot be checked), plain HTTP for reading only. */
function forgeProblem(t: Target): string | undefined {
  if (t.kind === 'connect') return REASONS.forgeTunnel(t);
  return forgeWriteProblem(t.method, t.path ?? '/', t.body ?? false);
}

/** Rule 6: the lists and grants that allow, in order. */
function allowedBy(input: NameInput, t: Target): AllowedBy | undefined {
  const g = input.grants;
  if (anyMatch(input.rules.allow, t)) return 'install';
  if (anyMatch(g.additions, t)) return 'repository-list';
  if (anyMatch(g.repository, t)) return 'repository';
  if (anyMatch(g.session, t)) return 'session';
  return g.once ? 'once' : undefined;
}

function agentName(input: NameInput, t: Target): NameDecision {
  if (input.grants.denied) return { verdict: 'refused', reason: REASONS.deniedByPhone(t) };
  if (isForge(input.rules.forgeHosts, t.host, t.port)) {
    const problem = forgeProblem(t);
    if (problem) return { verdict: 'refused', reason: problem };
    return { verdict: 'allowed', by: 'forge-read', exact: isForgeExactly(input.rules.forgeHosts, t.host, t.port) };
  }
  const by = allowedBy(input, t);
  if (by) {
    const exact = exactMatch(input.rules.allow, t) || exactMatch(input.grants.additions, t);
    return { verdict: 'allowed', by, exact };
  }
  if (!input.rules.ask) return { verdict: 'refused', reason: REASONS.askingOff(t) };
  if (!input.grants.streamOpen) return { verdict: 'refused', reason: REASONS.noStream(t) };
  return { verdict: 'ask' };
}

/** Step 1, on the name and port alone: nothing here needs the destination's address. */
export function decideName(input: NameInput): NameDecision {
  const t = input.target;
  if ('problem' in t) return { verdict: 'malformed', reason: t.problem };
  if (anyMatch(input.rules.deny, t)) return { verdict: 'refused', reason: REASONS.denied(t) };
  if (input.caller === 'agent') return agentName(input, t);
  if (!anyMatch(input.rules.supervisorAllow, t)) return { verdict: 'refused', reason: REASONS.notSupervisorListed(t) };
  return { verdict: 'allowed', by: 'supervisor', exact: exactMatch(input.rules.supervisorAllow, t) };
}

/** The forge hosts written as addresses (a name's addresses come from a lookup: forges.ts). */
export const literalForgeAddresses = (forges: readonly ForgeHost[]): ForgeAddress[] =>
  forges.flatMap((f) => (isIP(f.host) ? [{ address: canonicalAddress(f.host), port: f.port }] : []));

const forgeAt = (forges: readonly ForgeAddress[], address: string, port: number) =>
  forges.some((f) => f.address === canonicalAddress(address) && (f.port === undefined || f.port === port));

export interface AddressInput {
  caller: 'agent' | 'supervisor';
  target: Target;
  addresses: readonly string[];
  /** The install's deny list: its entries written as addresses hold for every name resolving there too. */
  deny: readonly HostEntry[];
  blocked: BlockedRanges;
  forgeAddresses: readonly ForgeAddress[];
  /** The step-1 decision's `exact` (false for a phone's grant: it never opens a blocked range). */
  exact: boolean;
}

/** A resolved address the install denies at this port (a deny entry written as that address). */
const deniedAt = (deny: readonly HostEntry[], addresses: readonly string[], port: number) =>
  addresses.find((a) =>
    deny.some((e) => isIP(e.host) && canonicalAddress(e.host) === canonicalAddress(a) && entryMatches(e, e.host, port)),
  );

/**
 * Step 2, on the addresses of an allowed destination: the install's denied addresses, the forge by its
 * address, then the blocked ranges.
 */
export function checkAddresses(input: AddressInput): AddressDecision {
  const t = input.target;
  if (input.addresses.length === 0) return { verdict: 'refused', reason: REASONS.unresolved(t) };
  const denied = deniedAt(input.deny, input.addresses, t.port);
  if (denied !== undefined) return { verdict: 'refused', reason: REASONS.deniedAddress(t, denied) };
  const forge =
    input.caller === 'agent' ? input.addresses.find((a) => forgeAt(input.forgeAddresses, a, t.port)) : undefined;
  if (forge !== undefined) {
    const problem = forgeProblem(t);
    return problem ? { verdict: 'refused', reason: problem } : { verdict: 'connect', address: forge, forge: true };
  }
  const inRange = input.exact ? undefined : input.addresses.find((a) => input.blocked.has(a));
  if (inRange !== undefined) return { verdict: 'refused', reason: REASONS.blocked(t, inRange) };
  return { verdict: 'connect', address: input.addresses[0]!, forge: false };
}

/** Both steps, the addresses already known (the table tests; admit.ts runs them apart). */
export function decide(input: DecisionInput): Decision {
  const named = decideName(input);
  if (named.verdict === 'malformed' || named.verdict === 'refused') return named;
  const t = input.target as Target;
  const checked = checkAddresses({
    caller: input.caller,
    target: t,
    addresses: input.addresses,
    deny: input.rules.deny,
    blocked: input.rules.blocked,
    forgeAddresses: input.forgeAddresses ?? literalForgeAddresses(input.rules.forgeHosts),
    exact: named.verdict === 'allowed' && named.exact,
  });
  if (checked.verdict === 'refused') return checked;
  if (checked.forge) return { verdict: 'allowed', by: 'forge-read', address: checked.address };
  if (named.verdict === 'ask') return { verdict: 'ask', address: checked.address };
  return { verdict: 'allowed', by: named.by, address: checked.address };
}
