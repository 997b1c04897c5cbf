// From a caller and a parsed destination to "connect to this address" or a refusal, in the order of
// docs/egress.md: the decision on the name first (decide.ts, step 1) — a refused name is never looked up
// — then the phone asked when it says so (no lookup needed), and only then the name resolved, once, and
// its addresses checked (step 2). An address given as such (or `localhost`) is checked before asking.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { HostEntry } from '../common/egress/hosts.ts';
import type { Asks } from './asks.ts';
import type { Caller, SessionsView } from './callers.ts';
import type { Rules } from './config.ts';
import { checkAddresses, decideName, NO_GRANTS, type AddressDecision, type NameDecision } from './decide.ts';
import type { ForgeAddresses } from './forges.ts';
import type { RepositoryGrants } from './grants.ts';
import type { Refusal } from './replies.ts';
import type { Parsed, Target } from './target.ts';

export interface AdmitDeps {
  rules: Rules;
  asks: Asks;
  sessions: SessionsView;
  grants: RepositoryGrants;
  forges: ForgeAddresses;
  /** Every address of a host name (the default: the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

export type Admission = { address: string; target: Target } | (Refusal & { target?: Target });

/** The system resolver's addresses; none when the name does not resolve. */
export async function systemResolve(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

/** The addresses of a destination known without a lookup: an address, or `localhost` (RFC 6761). */
export function knownAddresses(host: string): string[] | undefined {
  if (isIP(host)) return [host];
  if (host === 'localhost' || host.endsWith('.localhost')) return ['127.0.0.1', '::1'];
  return undefined;
}

function agentGrants(deps: AdmitDeps, caller: Caller, t: Target) {
  if (caller.kind !== 'agent') return NO_GRANTS;
  const repoUrl = deps.sessions.get(caller.session)?.repoUrl;
  const additions: HostEntry[] = repoUrl ? (deps.rules.repositories.get(repoUrl) ?? []) : [];
  const repository = repoUrl ? deps.grants.entriesFor(repoUrl) : [];
  return { additions, repository, ...deps.asks.grantsOf(caller.session, t.host, t.port) };
}

async function addressesChecked(
  deps: AdmitDeps,
  caller: Caller,
  t: Target,
  addresses: readonly string[],
  exact: boolean,
): Promise<AddressDecision> {
  const forgeAddresses = caller.kind === 'agent' ? await deps.forges.current() : [];
  return checkAddresses({
    caller: caller.kind,
    target: t,
    addresses,
    deny: deps.rules.deny,
    blocked: deps.rules.blocked,
    forgeAddresses,
    exact,
  });
}

const refusal = (reason: string, target: Target): Admission => ({ status: 403, reason, target });

/**
 * Asks the phone (an address known without a lookup is checked first: a blocked one or the forge's is
 * never asked about).
 */
async function askedAndAllowed(
  deps: AdmitDeps,
  caller: Caller,
  t: Target,
  signal?: AbortSignal,
): Promise<Admission | undefined> {
  if (caller.kind !== 'agent') throw new Error('only an agent connection is asked about');
  const known = knownAddresses(t.host);
  if (known) {
    const early = await addressesChecked(deps, caller, t, known, false);
    if (early.verdict === 'refused') return refusal(early.reason, t);
    if (early.forge) return { address: early.address, target: t };
  }
  const outcome = await deps.asks.ask(caller.session, t.host, t.port, t.method, signal);
  return outcome.allowed ? undefined : refusal(outcome.reason, t);
}

/** Where to connect, or why not (after the phone answered, when it was asked). */
export async function admit(deps: AdmitDeps, caller: Caller, target: Parsed, signal?: AbortSignal): Promise<Admission> {
  if ('problem' in target) return { status: 400, reason: target.problem };
  const t: Target = target;
  const grants = agentGrants(deps, caller, t);
  const named: NameDecision = decideName({ caller: caller.kind, target: t, rules: deps.rules, grants });
  if (named.verdict === 'malformed' || named.verdict === 'refused') return refusal(named.reason, t);
  // Taken before any await: connections opened together must not all pass on the one grant.
  if (named.verdict === 'allowed' && named.by === 'once' && caller.kind === 'agent')
    deps.asks.takeOnce(caller.session, t.host, t.port);
  if (named.verdict === 'ask') {
    const settled = await askedAndAllowed(deps, caller, t, signal);
    if (settled) return settled;
  }
  const addresses = knownAddresses(t.host) ?? (await (deps.resolve ?? systemResolve)(t.host));
  const exact = named.verdict === 'allowed' && named.exact;
  const checked = await addressesChecked(deps, caller, t, addresses, exact);
  if (checked.verdict === 'refused') return refusal(checked.reason, t);
  return { address: checked.address, target: t };
}
