// From a caller and a parsed destination to "connect to this address" or a refusal: the destination
// resolved once, the decision (decide.ts) over the lists and this Session's grants, and the phone asked
// when the decision says so.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { HostEntry } from '../common/egress/hosts.ts';
import type { Asks } from './asks.ts';
import type { Caller, SessionsView } from './callers.ts';
import type { Rules } from './config.ts';
import { decide, type Decision } from './decide.ts';
import type { RepositoryGrants } from './grants.ts';
import type { Refusal } from './replies.ts';
import type { Parsed, Target } from './target.ts';

export interface AdmitDeps {
  rules: Rules;
  asks: Asks;
  sessions: SessionsView;
  grants: RepositoryGrants;
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

function agentGrants(deps: AdmitDeps, caller: Caller, t: Target) {
  if (caller.kind !== 'agent')
    return { additions: [], repository: [], session: [], once: false, denied: false, streamOpen: false };
  const repoUrl = deps.sessions.get(caller.session)?.repoUrl;
  const additions: HostEntry[] = repoUrl ? (deps.rules.repositories.get(repoUrl) ?? []) : [];
  const repository = repoUrl ? deps.grants.entriesFor(repoUrl) : [];
  return { additions, repository, ...deps.asks.grantsOf(caller.session, t.host, t.port) };
}

async function decision(deps: AdmitDeps, caller: Caller, target: Parsed): Promise<Decision> {
  if ('problem' in target) return { verdict: 'malformed', reason: target.problem };
  const resolve = deps.resolve ?? systemResolve;
  const addresses = isIP(target.host) ? [target.host] : await resolve(target.host);
  return decide({
    caller: caller.kind,
    target,
    addresses,
    rules: deps.rules,
    grants: agentGrants(deps, caller, target),
  });
}

/** Where to connect, or why not (after the phone answered, when it was asked). */
export async function admit(deps: AdmitDeps, caller: Caller, target: Parsed): Promise<Admission> {
  const made = await decision(deps, caller, target);
  if (made.verdict === 'malformed') return { status: 400, reason: made.reason };
  const t = target as Target;
  if (made.verdict === 'refused') return { status: 403, reason: made.reason, target: t };
  if (made.verdict === 'allowed') {
    if (made.by === 'once' && caller.kind === 'agent') deps.asks.takeOnce(caller.session, t.host, t.port);
    return { address: made.address, target: t };
  }
  if (caller.kind !== 'agent') throw new Error('only an agent connection is asked about');
  const outcome = await deps.asks.ask(caller.session, t.host, t.port, t.method);
  return outcome.allowed ? { address: made.address, target: t } : { status: 403, reason: outcome.reason, target: t };
}
