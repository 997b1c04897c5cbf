// The executor of a reconcile pass: performs what the decision says and nothing else. Every write
// is recorded with the cache-freshness expectations, so no later pass acts on a cache that has not
// observed it. When making the workspace meets one the caches did not show, it stops and hands
// that back (`unseen`): the pass decides again with it.
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_SESSION_UID, runnerIdentityName, runnerName } from '../common/session/names.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import { isActive, isTerminal, type Step } from '../common/session/state-machine.ts';
import { desiredPod } from './builders.ts';
import { desiredIdentity, grantedSessions } from './identity.ts';
import { workspaceProblem, type Decision, type Observed } from './decide.ts';
import { statusEvents } from './events.ts';
import { desiredStorePvc } from './store-claim.ts';
import type { ReconcileDeps } from './reconcile-deps.ts';
import { ANNOTATION_TOKEN_EXPIRES, keepRunnerToken, needsToken } from './runner-token.ts';
import { computeStatus, type StatusInput } from './status.ts';
import { cachedClaim, desiredPvc } from './workspace-claim.ts';
import { podOf } from './live-pod.ts';
import { keptLive } from './cleanup.ts';
import { podConfigNow } from './runner-pod-config.ts';
import { desiredEgressSecret } from './runner-egress.ts';
import { differenceFromBuilt } from './runner-adoption.ts';

/** A status write: the status before and after, and the reason of the transition taken. */
export interface Written {
  before: SessionStatus;
  after: SessionStatus;
  reason?: string;
}

/** The caches lacked what the pass met: it decides again with it. */
interface Unseen {
  unseen: Pick<Observed, 'pvc'>;
}

export type Acted = { requeueAfterMs?: number; written?: Written; podCreated?: boolean } | Unseen;

const meta = (session: Session) => session.metadata as { namespace: string; name: string };
const podKey = (pod: V1Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

/**
 * Performs a decision's effects around the one status write: the phone's idle live Pods go first
 * (releasePods); CreatePod and ReplacePod (with the Pod's egress Secret) before the write (the status
 * names the Pod, and a pass that stops before it adopts the Pod and writes the Secret again), SetCompletionTime
 * in it, BindPod's Role grant and DeletePod after it (the runner acts on a Session only once the status
 * names its Pod; a stale decision fails with 409 instead of stopping a healthy runner). The phone-wide
 * effects follow in finish().
 */
export async function act(
  session: Session,
  decision: Decision,
  seen: Observed,
  deps: ReconcileDeps,
  now: Date,
): Promise<Acted> {
  const { step, message, exitCode, startProblem, bindPod } = decision;
  for (const idle of decision.releasePods ?? []) await deleteRunnerPod(idle, deps);
  let pod: V1Pod | undefined;
  if (step?.effects.includes('CreatePod')) {
    const made = await createPod(session, seen, deps);
    if ('unseen' in made) return made;
    pod = made;
  }
  if (step?.effects.includes('ReplacePod')) pod = await replacePod(session, seen, deps);
  // Made or adopted this pass (its uid known): its egress credential, before the status names it.
  if (pod && deps.config.egress) await deps.ops.putSecret(desiredEgressSecret(pod, deps.config.egress.key));
  const podInput = podStatus(step, pod, bindPod);
  // A Queued Session asks nothing more until the phone's turn comes (which wakes it); a started
  // one, until its Pod changes (which wakes it) or a deadline comes.
  const settled = step?.phase === 'Queued' || pod !== undefined || bindPod !== undefined;
  const written = await writeStatus(
    session,
    deps,
    now,
    { step, message, exitCode, startProblem, ...podInput },
    settled,
  );
  if (pod) deps.expectations.settle('pods', podKey(pod));
  // DeletePod releases the Pod: one the controller stops goes now; a live runner's waits (finish()).
  if (step?.effects.includes('DeletePod') && !keptLive(step.reason, seen.pod, deps.config.keepAliveMs))
    await deleteRunnerPod(seen.pod, deps);
  const runs = step ? isActive(step.phase) : isActive(session.status?.phase);
  // Every pass of a running Session makes sure its Role names it (no write when it does).
  if (runs && !step?.effects.includes('CreatePod')) await grantRunner(session, deps, bindPod ?? podOf(session));
  const tokenAfterMs = runs ? await keepToken(session, pod ?? seen.pod, deps, now) : undefined;
  const requeueAfterMs = earliest(decision.requeueAfterMs, tokenAfterMs);
  return {
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
    ...(written ? { written } : {}),
    ...(pod ? { podCreated: true } : {}),
  };
}

/** What the status write records of the Pod this pass made, replaced or bound. */
function podStatus(step: Step | undefined, pod: V1Pod | undefined, bindPod: string | undefined) {
  if (bindPod) return { pod: { name: bindPod, start: 'warm' as const } };
  if (!pod) return {};
  if (step?.effects.includes('ReplacePod')) return { replacement: pod.metadata!.name! };
  return { pod: { name: pod.metadata!.name!, createdAt: pod.metadata?.creationTimestamp, start: 'cold' as const } };
}

const earliest = (...delays: Array<number | undefined>) => {
  const known = delays.filter((d): d is number => d !== undefined);
  return known.length ? Math.min(...known) : undefined;
};

/**
 * With a GitHub App, the running Pod's token (runner-token.ts): minted when the Pod has none or its
 * renewal is due; returns when to look again.
 */
async function keepToken(session: Session, pod: V1Pod | undefined, deps: ReconcileDeps, now: Date) {
  if (!deps.github || !pod || !needsToken(pod)) return undefined;
  const kept = await keepRunnerToken(session, pod, deps.github, deps.ops, now);
  if (kept.annotated) {
    deps.expectations.wrote('pods', podKey(pod), kept.annotated, pod.metadata?.resourceVersion, true);
    deps.logger.info(
      { session: session.metadata.name, expiresAt: kept.annotated.metadata?.annotations?.[ANNOTATION_TOKEN_EXPIRES] },
      "wrote the runner's GitHub App token",
    );
  }
  return kept.requeueAfterMs;
}

/** Deletes a runner Pod that is there and not already going. */
export async function deleteRunnerPod(pod: V1Pod | undefined, deps: ReconcileDeps): Promise<void> {
  if (!pod || pod.metadata?.deletionTimestamp) return;
  await deps.ops.deletePod(pod.metadata!.namespace!, pod.metadata!.name!);
  deps.expectations.deleted('pods', podKey(pod));
}

/**
 * CreatePod: the workspace, the runner's identity and its Pod with its git store (adopted if they exist). Once the
 * workspace is known to be the phone's, they go out at once: the Pod needs neither the Role
 * nor the status to exist (the runner waits for Starting and tries a Forbidden start again,
 * common/kube/errors.ts). A Pod the caches did not show is expected until they do.
 */
async function createPod(session: Session, seen: Observed, deps: ReconcileDeps): Promise<V1Pod | Unseen> {
  const claim = seen.pvc?.metadata?.name ?? cachedClaim(session, deps);
  const runnerPod = async () => {
    // Also for an adopted Pod: a controller stopped between the Pod and its store would leave it Pending.
    const [made] = await Promise.all([
      ensureRunnerPod(session, deps, claim, 0),
      deps.ops.ensurePvc(desiredStorePvc(session, deps.config, claim)),
    ]);
    return made;
  };
  const early = seen.pvc ? runnerPod() : undefined;
  const [pvc] = await Promise.all([
    seen.pvc ?? deps.ops.ensurePvc(desiredPvc(session, deps.config, claim)),
    grantRunner(session, deps, runnerName(meta(session).name)),
    early,
  ]);
  if (workspaceProblem(session, pvc, deps.config.phoneHash)) return { unseen: { pvc } };
  return early ?? runnerPod();
}

/**
 * The Session's runner Pod `replacement` (0: the first), made, or adopted when one is there already: only
 * a Pod of this Session built as the controller builds it is adopted. Another (an older Session's of the
 * same name, or one made ahead of the controller with a program of its own) goes, and the pass retries.
 */
async function ensureRunnerPod(session: Session, deps: ReconcileDeps, claim: string, replacement: number) {
  const built = desiredPod(session, podConfigNow(deps.config, deps.cache.service), claim, replacement);
  const cached = deps.cache.pod(deps.config.runnerNamespace, built.metadata!.name!);
  const pod = await deps.ops.ensurePod(built);
  if (!cached) deps.expectations.wrote('pods', podKey(pod), pod, undefined, false);
  const owner =
    pod.metadata?.annotations?.[ANNOTATION_SESSION_UID] ??
    pod.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
  const problem =
    owner !== session.metadata.uid ? 'belongs to an older Session of the same name' : differenceFromBuilt(pod, built);
  if (!problem) return pod;
  await deleteRunnerPod(pod, deps);
  throw new Error(`pod ${pod.metadata?.name} ${problem}; removed, a new one follows`);
}

/**
 * ReplacePod: the lost Pod goes (if it is still there), and a new one (runnerName(session, 1)) is made on
 * the same workspace; the status write then names it. The Role already names the Session.
 */
async function replacePod(session: Session, seen: Observed, deps: ReconcileDeps): Promise<V1Pod> {
  await deleteRunnerPod(seen.pod, deps);
  const claim = seen.pvc?.metadata?.name ?? cachedClaim(session, deps);
  return ensureRunnerPod(session, deps, claim, (session.status?.runnerRestarts ?? 0) + 1);
}

/**
 * The phone's runner identity, its Role naming this Session (on the Pod `podName`) and the phone's
 * other Sessions whose runner Pod still exists — but not a finished one whose Pod this Session now
 * runs on: nothing to write when it already does, else one Role write (three creates on the phone's
 * first command).
 */
async function grantRunner(session: Session, deps: ReconcileDeps, podName: string): Promise<void> {
  const { name, namespace } = meta(session);
  const known = deps.cache.identity(namespace, runnerIdentityName(deps.config.phoneHash(session.spec.phone)));
  const granted = grantedSessions(known?.role);
  if (known?.bound && granted.includes(name)) return;
  const keeps = (other: string) => {
    const cached = deps.cache.session(`${namespace}/${other}`);
    const pod = cached ? podOf(cached) : runnerName(other);
    const done = cached && isTerminal(cached.status?.phase);
    return deps.cache.pod(deps.config.runnerNamespace, pod) !== undefined && !(done && pod === podName);
  };
  await deps.ops.ensureIdentity(desiredIdentity(session, [...granted.filter(keeps), name], deps.config), known);
}

/**
 * Writes the controller-owned status if anything changed, optimistically on the version the pass
 * read, and records it as expected (`settled`: the pass acted on it, so its watch event asks for
 * no pass); then its Events.
 */
export async function writeStatus(
  session: Session,
  deps: ReconcileDeps,
  now: Date,
  input: Omit<StatusInput, 'session' | 'now'>,
  settled: boolean,
): Promise<Written | undefined> {
  const outcome = computeStatus({ session, now, ...input });
  if (!outcome.patch) return undefined;
  const { namespace, name } = meta(session);
  const replaced = session.metadata.resourceVersion!;
  const response = await deps.ops.patchStatus(namespace, name, outcome.patch, replaced);
  deps.expectations.wrote('sessions', `${namespace}/${name}`, response, replaced, settled);
  const before = session.status ?? {};
  const log = deps.logger.child({ session: name, phoneHash: deps.config.phoneHash(session.spec.phone) });
  if (before.phase !== outcome.status.phase) {
    const { reason } = outcome;
    log.info(
      { from: before.phase ?? '(new)', to: outcome.status.phase, reason, message: input.message },
      'phase changed',
    );
  }
  for (const event of statusEvents(session, before, outcome.status, deps.config.identity, now)) {
    // An Event is a note for people; the status just written holds the fact, and a retried pass
    // would not write the same change again. So, as client-go's recorder does, a failed note is logged.
    await deps.ops
      .recordEvent(event)
      .catch((err: unknown) => log.warn({ err, reason: event.reason }, 'could not record an Event'));
  }
  return { before, after: outcome.status, ...(outcome.reason ? { reason: outcome.reason } : {}) };
}
