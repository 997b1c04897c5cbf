// Kubernetes Events (events.k8s.io/v1) for `kubectl describe session`: one per condition the
// controller writes — Queued, a runner Pod held back (Warning, with Kubernetes' reason:
// ImagePullBackOff, Unschedulable …), every end (Warning for Failed and TimedOut), and a lost runner
// Pod replaced (Warning RunnerReplaced). Admission has
// none: its condition (Admitted/PodCreated) and the Pod say it, and the write budget of an admission
// (Role, Pod, status) has no room for a fourth.
// Derived from the status change written, so a pass that writes nothing records nothing; the
// name is fixed per Session and reason, so a repeated record is refused as AlreadyExists.
import type { EventsV1Event } from '@kubernetes/client-node';
import type { Condition, Session, SessionStatus } from '../common/session/schema.ts';
import { API_VERSION, KIND } from '../common/session/schema.ts';
import { Reason } from '../common/session/state-machine.ts';
import { CONDITION_ADMITTED, CONDITION_FINISHED, CONDITION_STARTED, sameJson } from './conditions.ts';

export const REPORTING_CONTROLLER = 'tether.dev/controller';
const NOTE_MAX = 1024;
const NAME_MAX = 253;

/** An Event as the controller posts it (raw JSON): eventTime a MicroTime string (client-node's type has a Date). */
export type ControllerEvent = Omit<EventsV1Event, 'eventTime'> & { eventTime: string };

const WARNING_PHASES: readonly string[] = ['Failed', 'TimedOut'];

const warns = (condition: Condition, after: SessionStatus) =>
  (condition.type === CONDITION_FINISHED && WARNING_PHASES.includes(after.phase ?? '')) ||
  (condition.type === CONDITION_STARTED && condition.status === 'False');

/** Conditions new or changed between two statuses. */
function changedConditions(before: SessionStatus, after: SessionStatus): Condition[] {
  const old = before.conditions ?? [];
  return (after.conditions ?? []).filter(
    (c) =>
      !old.some((o) => o.type === c.type && sameJson({ ...o, observedGeneration: 0 }, { ...c, observedGeneration: 0 })),
  );
}

function eventName(session: Session, reason: string): string {
  const suffix = `.${(session.metadata.uid ?? '').slice(0, 8)}.${reason.toLowerCase()}`;
  return `${session.metadata.name!.slice(0, NAME_MAX - suffix.length)}${suffix}`;
}

/** A lost runner Pod replaced: a condition-less change, noted as a Warning. */
function replacement(before: SessionStatus, after: SessionStatus): Note[] {
  if ((after.runnerRestarts ?? 0) <= (before.runnerRestarts ?? 0)) return [];
  const message = `runner pod ${before.podName} was lost; ${after.podName} continues the run`;
  return [{ reason: Reason.RunnerReplaced, message, warning: true }];
}

interface Note {
  reason: string;
  message: string;
  warning: boolean;
}

/** The Events for the status change `before` → `after` the controller has just written. */
export function statusEvents(
  session: Session,
  before: SessionStatus,
  after: SessionStatus,
  reportingInstance: string,
  now: Date,
): ControllerEvent[] {
  const { name, namespace, uid } = session.metadata;
  const admitted = (c: Condition) => c.type === CONDITION_ADMITTED && c.status === 'True';
  const notes: Note[] = changedConditions(before, after)
    .filter((c) => !admitted(c))
    .map((c) => ({ reason: c.reason, message: c.message, warning: warns(c, after) }));
  return [...notes, ...replacement(before, after)].map((note) => ({
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: eventName(session, note.reason), namespace },
    // A MicroTime (RFC 3339 with microseconds), as the API server writes it.
    eventTime: now.toISOString().replace(/Z$/, '000Z'),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, 128),
    action: after.phase ?? 'Reconcile',
    reason: note.reason,
    note: note.message.slice(0, NOTE_MAX),
    type: note.warning ? 'Warning' : 'Normal',
    regarding: { apiVersion: API_VERSION, kind: KIND, name, namespace, uid },
  }));
}
