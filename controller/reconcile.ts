// reconcileSession: one level-based pass over one Session, top to bottom — fetch, terminal
// first, spec check, cancel, queue admission, PVC, RBAC, Pod, status. Status is written once,
// optimistically; a 409 re-reads and runs the pass again. Deadlines become requeueAfter.
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import type pino from 'pino';
import { isConflict } from '../common/kube/errors.ts';
import type { WorkResult } from '../common/kube/work-queue.ts';
import { phoneHash } from '../common/session/display.ts';
import { LABEL_PHONE_HASH, runnerName } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { admit } from './admission.ts';
import { desiredPod, desiredPvc, desiredRbac } from './builders.ts';
import type { ClusterOps } from './cluster.ts';
import type { ControllerConfig } from './config.ts';
import { CONDITION_FINISHED } from './conditions.ts';
import { decideActive, decideTerminal, specProblem } from './decide.ts';
import { computeStatus, type StatusInput } from './status.ts';

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
  /** Every Session of the same phone in the namespace, this one included or not. */
  siblings(session: Session): Session[];
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
    const session = attempt === 0 ? deps.cachedSession(key) ?? await deps.ops.getSession(namespace, name) : await deps.ops.getSession(namespace, name);
    if (!session || session.metadata.deletionTimestamp) {
      deps.approvals?.delete(key);
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
  const phase = session.status?.phase;
  if (isTerminal(phase)) return finish(session, deps, now);
  const fresh = phase === undefined || phase === 'Queued';
  if (fresh) {
    const problem = specProblem(session);
    if (problem) return write(session, deps, now, { event: { type: 'InvalidSpec' }, message: problem });
  }
  if (session.spec.cancel) {
    const result = await write(session, deps, now, { event: { type: 'Cancel' }, message: 'cancelled by the user' });
    if (!fresh) await deps.ops.deletePod(session.metadata.namespace!, runnerName(session.metadata.name!));
    return result;
  }
  return fresh ? admitAndStart(session, deps, now) : watchActive(session, deps, now);
};

function log(session: Session, deps: ReconcileDeps): pino.Logger {
  return deps.logger.child({ session: session.metadata.name, phoneHash: phoneHash(session.spec.phone) });
}

async function write(session: Session, deps: ReconcileDeps, now: Date, input: Omit<StatusInput, 'session' | 'now'>, result: WorkResult = {}): Promise<WorkResult> {
  const outcome = computeStatus({ session, now, ...input });
  if (!outcome.patch) return result;
  const { namespace, name, resourceVersion } = session.metadata as { namespace: string; name: string; resourceVersion: string };
  await deps.ops.patchStatus(namespace, name, outcome.patch, resourceVersion);
  const from = session.status?.phase;
  const to = outcome.status.phase!;
  if (from !== to) {
    log(session, deps).info({ from: from ?? '(new)', to, reason: outcome.reason, message: input.message }, 'phase changed');
    deps.observer?.transition?.(session, from, to, outcome.reason);
  }
  const wasFinished = session.status?.conditions?.some((c) => c.type === CONDITION_FINISHED);
  if (isTerminal(to) && !wasFinished) {
    const begin = Date.parse(outcome.status.startTime ?? new Date(session.metadata.creationTimestamp ?? now).toISOString());
    deps.observer?.finished?.(session, to, (Date.parse(outcome.status.completionTime!) - begin) / 1000);
  }
  return result;
}

async function admitAndStart(session: Session, deps: ReconcileDeps, now: Date): Promise<WorkResult> {
  const { namespace, name } = session.metadata as { namespace: string; name: string };
  const admission = admit(session, deps.siblings(session), deps.config.maxQueued);
  switch (admission.kind) {
    case 'cleared':
      return write(session, deps, now, { event: { type: 'Cancel' }, message: `cancelled together with the queue of ${admission.by}` });
    case 'full':
      return write(session, deps, now, { event: { type: 'QueueFull' }, message: `${admission.queued} commands are already waiting for this phone; send it again later` });
    case 'wait':
      return write(session, deps, now, session.status?.phase === 'Queued' ? {} : { event: { type: 'Enqueue' }, message: `waiting for the phone's earlier command (#${admission.position})` });
    case 'run':
      break;
  }
  // A Pod is about to be made: a stale cache must not resurrect the Pod of a Session that moved on.
  // The re-read, the workspace and the runner's credentials are independent: one round trip.
  const [current, pvc] = await Promise.all([
    deps.ops.getSession(namespace, name),
    deps.cachedPvc(namespace, session.spec.workspace) ?? deps.ops.ensurePvc(desiredPvc(session, deps.config)),
    deps.ops.ensureRbac(desiredRbac(session)),
  ]);
  if (current?.metadata.resourceVersion !== session.metadata.resourceVersion) throw new StaleCache(name);
  const owner = pvc.metadata?.labels?.[LABEL_PHONE_HASH];
  if (owner !== undefined && owner !== phoneHash(session.spec.phone)) {
    return write(session, deps, now, { event: { type: 'InvalidSpec' }, message: `workspace "${session.spec.workspace}" belongs to another phone` });
  }
  const pod = deps.cachedPod(namespace, runnerName(name)) ?? await deps.ops.ensurePod(desiredPod(session, deps.config));
  const podOwner = pod.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
  if (podOwner !== session.metadata.uid) throw new Error(`pod ${pod.metadata?.name} belongs to an older Session of the same name; waiting for its removal`);
  const result = await write(session, deps, now, { event: { type: 'PodCreated' }, pod: { name: pod.metadata!.name!, createdAt: pod.metadata?.creationTimestamp } });
  const created = new Date(session.metadata.creationTimestamp ?? now).getTime();
  deps.observer?.started?.(session, Math.max(0, now.getTime() - created) / 1000);
  return result;
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

async function watchActive(session: Session, deps: ReconcileDeps, now: Date): Promise<WorkResult> {
  const { namespace, name } = session.metadata as { namespace: string; name: string };
  const podName = runnerName(name);
  const pod = deps.cachedPod(namespace, podName) ?? await deps.ops.getPod(namespace, podName);
  trackApproval(session, deps, now);
  const decision = decideActive(session, pod, now, deps.config);
  const result = await write(session, deps, now, { event: decision.event, message: decision.message, exitCode: decision.exitCode },
    decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {});
  if (decision.deletePod) await deps.ops.deletePod(namespace, podName);
  return result;
}

async function finish(session: Session, deps: ReconcileDeps, now: Date): Promise<WorkResult> {
  const { namespace, name } = session.metadata as { namespace: string; name: string };
  trackApproval(session, deps, now);
  const outcome = computeStatus({ session, now });
  await write(session, deps, now, {});
  const settled = { ...session, status: outcome.status };
  const pod = deps.cachedPod(namespace, runnerName(name));
  const decision = decideTerminal(settled, pod, deps.siblings(session), now, deps.config);
  if (decision.deleteSession) {
    log(session, deps).info('removing finished session beyond the history limits');
    await deps.ops.deleteSession(namespace, name);
    return {};
  }
  if (decision.deletePod) await deps.ops.deletePod(namespace, runnerName(name));
  return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
}
