// reconcileSession: one level-based pass over one Session. A pure decide step (decide.ts for an
// unfinished Session, cleanup.ts for a finished one) returns the transition with the effects the
// state machine gives it; this file performs them. Status is written once, optimistically; a 409
// re-reads and runs the pass again. Deadlines become requeueAfter.
import type { V1PersistentVolumeClaim, V1Pod, V1Role } from '@kubernetes/client-node';
import type pino from 'pino';
import { isConflict, isNotFound } from '../common/kube/errors.ts';
import type { WorkResult } from '../common/kube/work-queue.ts';
import { phoneHash } from '../common/session/display.ts';
import { ANNOTATION_SESSION_UID, runnerIdentityName, runnerName } from '../common/session/names.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import { isActive, isTerminal } from '../common/session/state-machine.ts';
import { desiredIdentity, desiredPod, desiredPvc, grantedSessions } from './builders.ts';
import { decideTerminal } from './cleanup.ts';
import type { ClusterOps } from './cluster.ts';
import type { ControllerConfig } from './config.ts';
import { CONDITION_FINISHED } from './conditions.ts';
import { decide, decideActive, take, workspaceProblem, type Decision, type Observed } from './decide.ts';
import { statusEvents } from './events.ts';
import { computeStatus, finalStatusWritten, type StatusInput } from './status.ts';

export interface ReconcileObserver {
  transition?(session: Session, from: string | undefined, to: string, reason: string | undefined): void;
  finished?(session: Session, outcome: string, seconds: number): void;
  started?(session: Session, seconds: number): void;
  approvalWait?(seconds: number): void;
}

export interface ReconcileDeps {
  ops: ClusterOps;
  config: ControllerConfig;
  logger: pino.Logger;
  now: () => Date;
  /** Cached reads (informers); a miss falls back to the API where it matters. */
  cachedSession(key: string): Session | undefined;
  cachedPod(namespace: string, name: string): V1Pod | undefined;
  cachedPvc(namespace: string, name: string): V1PersistentVolumeClaim | undefined;
  /** A phone's runner Role as cached, and whether its RoleBinding exists. */
  cachedIdentity(namespace: string, name: string): { role: V1Role; bound: boolean } | undefined;
  /** Every Session of the same phone in the namespace, this one included or not. */
  siblings(session: Session): Session[];
  /**
   * The controller wrote this Session's status (the response; the version the write replaced). When
   * its pass acted on the result (a queued or started Session, or the clean-up of a finished one),
   * the watch event of that very write needs no pass of its own.
   */
  wrote?(written: Session, replaced: string, actedOn: boolean): void;
  /** Queues a pass for each waiting Session of the phone (ClearPhoneQueue, StartNextQueued). */
  wakeWaiting(session: Session): void;
  observer?: ReconcileObserver;
  /** Open approval requests seen, for the approval-wait metric: key → pending id and createdAt. */
  approvals?: Map<string, { id: string; createdAt: string }>;
}

type Pass = (session: Session, deps: ReconcileDeps, now: Date) => Promise<WorkResult>;

const MAX_CONFLICT_RETRIES = 3;

/** The cached Session was behind the API server; the pass starts over from a fresh read. */
class StaleCache extends Error {}

export async function reconcileSession(key: string, deps: ReconcileDeps): Promise<WorkResult> {
  const [namespace, name] = key.split('/') as [string, string];
  for (let attempt = 0; ; attempt++) {
    const session =
      attempt === 0
        ? (deps.cachedSession(key) ?? (await deps.ops.getSession(namespace, name)))
        : await deps.ops.getSession(namespace, name);
    if (!session || session.metadata.deletionTimestamp) {
      deps.approvals?.delete(key);
      await removeRunner(name, deps);
      return {};
    }
    try {
      return await pass(session, deps, deps.now());
    } catch (error) {
      if (!(isConflict(error) || error instanceof StaleCache) || attempt >= MAX_CONFLICT_RETRIES) throw error;
      deps.logger.debug({ session: name }, 'status changed meanwhile; re-reading');
    }
  }
}

const pass: Pass = async (session, deps, now) => {
  trackApproval(session, deps, now);
  if (isTerminal(session.status?.phase)) return finish(session, deps, now);
  const seen = await observe(session, deps);
  return act(session, decide(session, seen, now, deps.config), seen, deps, now);
};

const meta = (session: Session) => session.metadata as { namespace: string; name: string };

function log(session: Session, deps: ReconcileDeps): pino.Logger {
  return deps.logger.child({ session: session.metadata.name, phoneHash: phoneHash(session.spec.phone) });
}

async function observe(session: Session, deps: ReconcileDeps): Promise<Observed> {
  const runners = deps.config.runnerNamespace;
  const podName = runnerName(meta(session).name);
  const pod =
    deps.cachedPod(runners, podName) ??
    (isActive(session.status?.phase) ? await deps.ops.getPod(runners, podName) : undefined);
  return { siblings: deps.siblings(session), pod, pvc: deps.cachedPvc(runners, session.spec.workspace) };
}

/** The runner Pod of a Session that is gone (a Pod in another namespace has no owner to collect it). */
async function removeRunner(name: string, deps: ReconcileDeps): Promise<void> {
  const pod = deps.cachedPod(deps.config.runnerNamespace, runnerName(name));
  if (pod && !pod.metadata?.deletionTimestamp) await deps.ops.deletePod(deps.config.runnerNamespace, runnerName(name));
}

/**
 * Performs a decision's effects around the one status write: CreatePod before it (the status
 * names the Pod), SetCompletionTime in it, DeletePod after it (so a stale decision fails with
 * 409 instead of stopping a healthy runner). The phone-wide effects follow in finish().
 */
async function act(
  session: Session,
  decision: Decision,
  seen: Observed,
  deps: ReconcileDeps,
  now: Date,
): Promise<WorkResult> {
  const { step, message, exitCode, startProblem } = decision;
  let pod: V1Pod | undefined;
  let madeHere = false;
  if (step?.effects.includes('CreatePod')) {
    const made = await createPod(session, deps);
    if ('problem' in made)
      return act(session, { step: take(session, { type: 'InvalidSpec' }), message: made.problem }, seen, deps, now);
    ({ pod, madeHere } = made);
  }
  const podInput = pod ? { pod: { name: pod.metadata!.name!, createdAt: pod.metadata?.creationTimestamp } } : {};
  // A Queued Session asks nothing more until the phone's turn comes (which wakes it); a started
  // one, until its Pod changes (which wakes it) or a deadline comes (armed here).
  const writing = () =>
    write(
      session,
      deps,
      now,
      { step, message, exitCode, startProblem, ...podInput },
      step?.phase === 'Queued' || pod !== undefined,
    );
  const status = madeHere ? await provingCurrent(session, deps, writing) : await writing();
  const seenPod = seen.pod;
  if (step?.effects.includes('DeletePod') && seenPod && !seenPod.metadata?.deletionTimestamp) {
    await deps.ops.deletePod(deps.config.runnerNamespace, seenPod.metadata!.name!);
  }
  if (pod) {
    const created = new Date(session.metadata.creationTimestamp ?? now).getTime();
    deps.observer?.started?.(session, Math.max(0, now.getTime() - created) / 1000);
    const deadline = decideActive({ ...session, status }, pod, now, deps.config).requeueAfterMs;
    return deadline !== undefined ? { requeueAfterMs: deadline } : {};
  }
  return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
}

/**
 * CreatePod: the workspace, the runner's identity and its Pod (adopted if they exist). Once the
 * workspace is known to be the phone's, the three go out at once: the Pod needs neither the Role
 * nor the status to exist (the runner waits for Starting and retries a Forbidden start,
 * common/kube/errors.ts). `madeHere`: the Pod was not in the cache, so the status write that
 * follows must prove the cache was current (provingCurrent).
 */
async function createPod(
  session: Session,
  deps: ReconcileDeps,
): Promise<{ pod: V1Pod; madeHere: boolean } | { problem: string }> {
  const { name } = meta(session);
  const runners = deps.config.runnerNamespace;
  const cachedPvc = deps.cachedPvc(runners, session.spec.workspace);
  const known = cachedPvc && workspaceProblem(session, cachedPvc);
  if (known) return { problem: known };
  const cachedPod = deps.cachedPod(runners, runnerName(name));
  const runnerPod = () => cachedPod ?? deps.ops.ensurePod(desiredPod(session, deps.config));
  const early = cachedPvc ? runnerPod() : undefined;
  const [pvc] = await Promise.all([
    cachedPvc ?? deps.ops.ensurePvc(desiredPvc(session, deps.config)),
    grantRunner(session, deps),
    early,
  ]);
  const problem = workspaceProblem(session, pvc);
  if (problem) return { problem };
  const pod = await (early ?? runnerPod());
  const owner =
    pod.metadata?.annotations?.[ANNOTATION_SESSION_UID] ??
    pod.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
  if (owner !== session.metadata.uid) {
    if (!pod.metadata?.deletionTimestamp) await deps.ops.deletePod(runners, pod.metadata!.name!);
    throw new Error(`pod ${pod.metadata?.name} belongs to an older Session of the same name; waiting for its removal`);
  }
  return { pod, madeHere: !cachedPod };
}

/**
 * The status write after a Pod was made names the resourceVersion the pass read, so it succeeds
 * only if the cache was current. When it fails because the Session changed or is gone, a stale
 * cache must not resurrect the runner of a Session that is gone or finished: the Pod is removed
 * and the pass starts over from a fresh read.
 */
async function provingCurrent(
  session: Session,
  deps: ReconcileDeps,
  writing: () => Promise<SessionStatus>,
): Promise<SessionStatus> {
  try {
    return await writing();
  } catch (error) {
    if (!isConflict(error) && !isNotFound(error)) throw error;
    const { namespace, name } = meta(session);
    const current = await deps.ops.getSession(namespace, name);
    if (!current || current.metadata.uid !== session.metadata.uid || isTerminal(current.status?.phase)) {
      await deps.ops.deletePod(deps.config.runnerNamespace, runnerName(name));
    }
    throw new StaleCache(name);
  }
}

/**
 * The phone's runner identity, its Role naming this Session and the phone's other Sessions whose
 * runner Pod still exists: nothing to write when it already does, else one Role write (three
 * creates on the phone's first command).
 */
async function grantRunner(session: Session, deps: ReconcileDeps): Promise<void> {
  const name = meta(session).name;
  const known = deps.cachedIdentity(meta(session).namespace, runnerIdentityName(phoneHash(session.spec.phone)));
  const granted = grantedSessions(known?.role);
  if (known?.bound && granted.includes(name)) return;
  const running = granted.filter((other) => deps.cachedPod(deps.config.runnerNamespace, runnerName(other)));
  await deps.ops.ensureIdentity(desiredIdentity(session, [...running, name], deps.config), known);
}

/** Writes the controller-owned status (if anything changed) and reports the change. */
async function write(
  session: Session,
  deps: ReconcileDeps,
  now: Date,
  input: Omit<StatusInput, 'session' | 'now'>,
  actsOnResult = false,
): Promise<SessionStatus> {
  const outcome = computeStatus({ session, now, ...input });
  if (!outcome.patch) return outcome.status;
  const { namespace, name } = meta(session);
  const written = await deps.ops.patchStatus(namespace, name, outcome.patch, session.metadata.resourceVersion!);
  const before = session.status ?? {};
  const to = outcome.status.phase!;
  deps.wrote?.(written, session.metadata.resourceVersion!, actsOnResult);
  if (before.phase !== to) {
    log(session, deps).info(
      { from: before.phase ?? '(new)', to, reason: outcome.reason, message: input.message },
      'phase changed',
    );
    deps.observer?.transition?.(session, before.phase, to, outcome.reason);
  }
  const wasFinished = before.conditions?.some((c) => c.type === CONDITION_FINISHED);
  if (isTerminal(to) && !wasFinished) {
    const begin = Date.parse(
      outcome.status.startTime ?? new Date(session.metadata.creationTimestamp ?? now).toISOString(),
    );
    deps.observer?.finished?.(session, to, (Date.parse(outcome.status.completionTime!) - begin) / 1000);
  }
  for (const event of statusEvents(session, before, outcome.status, deps.config.identity, now)) {
    // An Event is a note for people; the status just written holds the fact, and a retried pass
    // would not write the same change again. So, as client-go's recorder does, a failed note is logged.
    await deps.ops
      .recordEvent(event)
      .catch((err: unknown) => log(session, deps).warn({ err, reason: event.reason }, 'could not record an Event'));
  }
  return outcome.status;
}

function trackApproval(session: Session, deps: ReconcileDeps, now: Date): void {
  if (!deps.approvals) return;
  const key = `${session.metadata.namespace}/${session.metadata.name}`;
  const open = session.status?.phase === 'AwaitingApproval' ? session.status.pending : undefined;
  const seen = deps.approvals.get(key);
  if (seen && seen.id !== open?.id) {
    deps.observer?.approvalWait?.(Math.max(0, now.getTime() - Date.parse(seen.createdAt)) / 1000);
    deps.approvals.delete(key);
  }
  if (open && !seen) deps.approvals.set(key, { id: open.id, createdAt: open.createdAt });
}

/**
 * A finished Session: records its end (Finished condition) if the runner wrote it, then performs
 * what the end still asks — ClearPhoneQueue/StartNextQueued by waking the phone's waiting
 * Sessions (their admission applies them; this pass runs once the cache holds the end), DeletePod
 * when due — and removes finished Sessions beyond the history limits.
 */
async function finish(session: Session, deps: ReconcileDeps, now: Date): Promise<WorkResult> {
  const { namespace, name } = meta(session);
  const settled = finalStatusWritten(session)
    ? session
    : { ...session, status: await write(session, deps, now, {}, true) };
  const runners = deps.config.runnerNamespace;
  const cleanup = decideTerminal(
    settled,
    deps.cachedPod(runners, runnerName(name)),
    deps.siblings(session),
    now,
    deps.config,
  );
  if (cleanup.effects.includes('ClearPhoneQueue') || cleanup.effects.includes('StartNextQueued'))
    deps.wakeWaiting(session);
  for (const expired of cleanup.deleteSessions) {
    log(session, deps).info({ removed: expired }, 'removing a finished session beyond the history limits');
    await deps.ops.deleteSession(namespace, expired);
  }
  if (cleanup.deleteSessions.includes(name)) return {};
  if (cleanup.effects.includes('DeletePod')) await deps.ops.deletePod(runners, runnerName(name));
  return cleanup.requeueAfterMs !== undefined ? { requeueAfterMs: cleanup.requeueAfterMs } : {};
}
