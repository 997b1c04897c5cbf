// The proxy's one decision about a connection, as a pure function of what is known when it arrives
// (docs/egress.md, "The rules"). First match wins; deny before allow; the address returned is the one
// checked, and the only one the proxy connects to (no second lookup: DNS rebinding).
import { entryMatches, type HostEntry } from '../common/egress/hosts.ts';
import type { BlockedRanges } from './cidrs.ts';
import { forgeWriteProblem, isForge, type ForgeHost, type Parsed, type Target } from './target.ts';

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

export interface DecisionInput {
  caller: 'agent' | 'supervisor';
  target: Parsed;
  /** What the host resolved to (the address itself for an address); empty when it did not resolve. */
  addresses: readonly string[];
  rules: DecisionRules;
  /** The agent's Session; unused for the supervisor. */
  grants: SessionGrants;
}

export type AllowedBy = 'forge-read' | 'install' | 'repository-list' | 'repository' | 'session' | 'once' | 'supervisor';

export type Decision =
  | { verdict: 'malformed'; reason: string }
  | { verdict: 'refused'; reason: string }
  | { verdict: 'allowed'; by: AllowedBy; address: string }
  | { verdict: 'ask'; address: string };

const where = (t: Target) => `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
const anyMatch = (list: readonly HostEntry[], t: Target) => list.some((e) => entryMatches(e, t.host, t.port));

export const REASONS = {
  denied: (t: Target) => `${where(t)} is denied by this install`,
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

/** Rule 4: an address in a blocked range refuses, unless the install itself listed the destination. */
function blockedProblem(input: DecisionInput, t: Target, installListed: boolean): string | undefined {
  if (input.addresses.length === 0) return REASONS.unresolved(t);
  if (installListed) return undefined;
  const inRange = input.addresses.find((a) => input.rules.blocked.has(a));
  return inRange === undefined ? undefined : REASONS.blocked(t, inRange);
}

function decideSupervisor(input: DecisionInput, t: Target): Decision {
  const listed = anyMatch(input.rules.supervisorAllow, t);
  const problem = blockedProblem(input, t, listed);
  if (problem) return { verdict: 'refused', reason: problem };
  if (listed) return { verdict: 'allowed', by: 'supervisor', address: input.addresses[0]! };
  return { verdict: 'refused', reason: REASONS.notSupervisorListed(t) };
}

/** Rule 5: the lists and grants that allow, in order. */
function allowedBy(input: DecisionInput, t: Target): AllowedBy | undefined {
  const g = input.grants;
  if (anyMatch(input.rules.allow, t)) return 'install';
  if (anyMatch(g.additions, t)) return 'repository-list';
  if (anyMatch(g.repository, t)) return 'repository';
  if (anyMatch(g.session, t)) return 'session';
  return g.once ? 'once' : undefined;
}

function decideAgent(input: DecisionInput, t: Target): Decision {
  if (isForge(input.rules.forgeHosts, t.host, t.port)) {
    if (t.kind === 'connect') return { verdict: 'refused', reason: REASONS.forgeTunnel(t) };
    const write = forgeWriteProblem(t.method, t.path ?? '/');
    if (write) return { verdict: 'refused', reason: write };
    const problem = blockedProblem(input, t, true);
    if (problem) return { verdict: 'refused', reason: problem };
    return { verdict: 'allowed', by: 'forge-read', address: input.addresses[0]! };
  }
  const installListed = anyMatch(input.rules.allow, t) || anyMatch(input.grants.additions, t);
  const problem = blockedProblem(input, t, installListed);
  if (problem) return { verdict: 'refused', reason: problem };
  const address = input.addresses[0]!;
  const by = allowedBy(input, t);
  if (by) return { verdict: 'allowed', by, address };
  if (input.grants.denied) return { verdict: 'refused', reason: REASONS.deniedByPhone(t) };
  if (!input.rules.ask) return { verdict: 'refused', reason: REASONS.askingOff(t) };
  if (!input.grants.streamOpen) return { verdict: 'refused', reason: REASONS.noStream(t) };
  return { verdict: 'ask', address };
}

/** The decision about one connection (docs/egress.md, "The rules"). */
export function decide(input: DecisionInput): Decision {
  const t = input.target;
  if ('problem' in t) return { verdict: 'malformed', reason: t.problem };
  if (anyMatch(input.rules.deny, t)) return { verdict: 'refused', reason: REASONS.denied(t) };
  return input.caller === 'supervisor' ? decideSupervisor(input, t) : decideAgent(input, t);
}
