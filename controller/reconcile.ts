// reconcileSession: one level-based pass over one Session, in three steps. Observe: the Session and
// what the caches show, once the caches have observed the controller's own writes (expectations.ts).
// Decide: one pure function (decide.ts for an unfinished Session, cleanup.ts for a finished one)
// returns the transition with the effects the state machine gives it. Act: execute.ts performs
// exactly that. A 409 re-reads the Session from the API server and runs the pass again
// (retryOnConflict); deadlines become requeueAfter. The pass reports what it did (PassResult);
// metrics are taken from that report, outside the pass.
import { done, retryOnConflict } from '../common/kube/retry.ts';
import type { WorkResult } from '../common/kube/work-queue.ts';
import { runnerName } from '../common/session/names.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import { isActive, isTerminal } from '../common/session/state-machine.ts';
import { decideTerminal } from './cleanup.ts';
import { decide, type Observed } from './decide.ts';
import { act, deleteRunnerPod, writeStatus, type Written } from './execute.ts';
import { EXPECTATION_TIMEOUT_MS, type CachedKind } from './expectations.ts';
import type { ReconcileDeps } from './reconcile-deps.ts';
import { cachedClaim } from './workspace-claim.ts';
import { runnerKey } from './builders.ts';
import { podOf } from './live-pod.ts';
import { podConfig } from './runner-pod-config.ts';
import { computeStatus, finalStatusWritten } from './status.ts';

export type { ClusterCache, ReconcileDeps } from './reconcile-deps.ts';

/** What one pass did: the work queue's next step, and what the metrics observe. */
export interface PassResult extends WorkResult {
  now: Date;
  /** The Session as the pass read it; absent when it is gone. */
  session?: Session;
  /** The status write the pass made, if any. */
  written?: Written;
  /** The pass created (or adopted) the runner Pod. */
  podCreated?: boolean;
  /** The pass did nothing: the caches had not yet observed the controller's own writes. */
  waited?: boolean;
}

export const sessionKey = (session: Session) => `${session.metadata.namespace}/${session.metadata.name}`;

export async function reconcileSession(key: string, deps: ReconcileDeps): Promise<PassResult> {
  const [namespace, name] = key.split('/') as [string, string];
  // The pass is the write: a 409 anywhere in it re-reads the Session from the API server.
  return retryOnConflict(
    async (tries) => (tries === 0 ? deps.cache.session(key) : undefined) ?? deps.ops.getSession(namespace, name),
    async (session) =>
      session && !session.metadata.deletionTimestamp ? session : done(await removeRunner(key, name, deps)),
    (session) => pass(session, deps),
  );
}

/** The objects a pass over `session` reads from the caches (a waiting one: the phone's runner Pods too). */
function reads(session: Session, siblings: Session[], deps: ReconcileDeps): [CachedKind, string][] {
  const runners = deps.config.runnerNamespace;
  const phonePods = isWaiting(session) ? deps.cache.phonePods(deps.config.phoneHash(session.spec.phone)) : [];
  return [
    ['sessions', sessionKey(session)],
    ['pods', `${runners}/${podOf(session)}`],
    ...phonePods.map((p): [CachedKind, string] => ['pods', `${runners}/${p.metadata!.name!}`]),
    ...siblings.map((s): [CachedKind, string] => ['sessions', sessionKey(s)]),
  ];
}

const isWaiting = (session: Session) => session.status?.phase === undefined || session.status.phase === 'Queued';

async function pass(session: Session, deps: ReconcileDeps): Promise<PassResult> {
  const now = deps.now();
  const siblings = deps.cache.siblings(session);
  if (!deps.expectations.fresh(reads(session, siblings, deps), sessionKey(session)))
    return { now, session, waited: true, requeueAfterMs: EXPECTATION_TIMEOUT_MS };
  if (isTerminal(session.status?.phase)) return { now, session, ...(await finish(session, siblings, deps, now)) };
  const seen = await observe(session, siblings, deps);
  const first = await act(session, decide(session, seen, now, deps.config), seen, deps, now);
  if (!('unseen' in first)) return { now, session, ...first };
  // Making the workspace met one the caches did not show: decide again with it.
  const known = { ...seen, ...first.unseen };
  const second = await act(session, decide(session, known, now, deps.config), known, deps, now);
  if ('unseen' in second) throw new Error(`workspace of ${session.metadata.name} changed during the pass`);
  return { now, session, ...second };
}

async function observe(session: Session, siblings: Session[], deps: ReconcileDeps): Promise<Observed> {
  const runners = deps.config.runnerNamespace;
  const podName = podOf(session);
  // A lost Pod is replaced or fails its Session: the caches' "no Pod" is confirmed against the API server first.
  const pod =
    deps.cache.pod(runners, podName) ??
    (isActive(session.status?.phase) ? await deps.ops.getPod(runners, podName) : undefined);
  const claim = cachedClaim(session, deps);
  const seen = { siblings, pod, pvc: deps.cache.pvc(runners, claim) };
  if (!isWaiting(session)) return seen;
  const pods = podConfig(deps.config, deps.cache.service);
  if ('problem' in pods) return { ...seen, podProblem: pods.problem };
  const phoneHash = deps.config.phoneHash(session.spec.phone);
  const wanted = { phoneHash, claim, key: runnerKey(session, pods.config, claim) };
  return { ...seen, live: { pods: deps.cache.phonePods(phoneHash), wanted } };
}

/**
 * The runner Pods made for a Session that is gone (a Pod in another namespace, or one kept live, has
 * no owner to collect it) — but never one another Session is bound to: its own end releases it.
 */
async function removeRunner(key: string, name: string, deps: ReconcileDeps): Promise<PassResult> {
  const now = deps.now();
  const runners = deps.config.runnerNamespace;
  const names = [runnerName(name), runnerName(name, 1)];
  const podKeys = names.map((pod): [CachedKind, string] => ['pods', `${runners}/${pod}`]);
  if (!deps.expectations.fresh(podKeys, key)) return { now, waited: true, requeueAfterMs: EXPECTATION_TIMEOUT_MS };
  for (const podName of names) {
    const pod = deps.cache.pod(runners, podName);
    const others = pod ? deps.cache.boundTo(pod).filter((s) => s.metadata.name !== name) : [];
    if (others.length === 0) await deleteRunnerPod(pod, deps);
  }
  return { now };
}

/**
 * A finished Session: records its end (Finished condition) if the runner wrote it, then performs
 * what the end still asks — ClearPhoneQueue/StartNextQueued by waking the phone's waiting
 * Sessions (their admission applies them), DeletePod when due — and removes finished Sessions
 * beyond the history limits.
 */
async function finish(session: Session, siblings: Session[], deps: ReconcileDeps, now: Date) {
  const { namespace, name } = session.metadata as { namespace: string; name: string };
  const status: SessionStatus | undefined = finalStatusWritten(session)
    ? session.status
    : computeStatus({ session, now }).status;
  const pod = deps.cache.pod(deps.config.runnerNamespace, podOf(session));
  const cleanup = decideTerminal({ ...session, status }, pod, siblings, now, deps.config);

  const written = finalStatusWritten(session) ? undefined : await writeStatus(session, deps, now, {}, true);
  if (cleanup.effects.includes('ClearPhoneQueue') || cleanup.effects.includes('StartNextQueued'))
    deps.wakeWaiting(session);
  for (const expired of cleanup.deleteSessions) {
    deps.logger.info({ session: name, removed: expired }, 'removing a finished session beyond the history limits');
    await deps.ops.deleteSession(namespace, expired);
    deps.expectations.deleted('sessions', `${namespace}/${expired}`);
  }
  const result = written ? { written } : {};
  if (cleanup.deleteSessions.includes(name)) return result;
  if (cleanup.effects.includes('DeletePod')) await deleteRunnerPod(pod, deps);
  return cleanup.requeueAfterMs !== undefined ? { ...result, requeueAfterMs: cleanup.requeueAfterMs } : result;
}
