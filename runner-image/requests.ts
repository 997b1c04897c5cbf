// Pending requests: raise one (status.pending + AwaitingApproval), wait for the matching entry in
// spec.decisions, record the decision through transition() and hand its effects to the caller
// (RevertWorkspace before the record, Publish and ResumeAgent after it). One request open at a time.
import pLimit from 'p-limit';
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { LIMITS, type Decision, type Pending, type Session } from '../common/session/schema.ts';
import { transition, type Effect, type Event } from '../common/session/state-machine.ts';
import type { StatusWriter } from './status.ts';

export type Kind = Pending['kind'];

export class Stopped extends Error {}

export interface Decided {
  decision: Decision;
  /** What the state machine says this decision causes (none if it could not be recorded). */
  effects: readonly Effect[];
}

type BeforeRecord = (effects: readonly Effect[]) => Promise<void>;

export const isApproval = (d: Decision) => d.action === 'approve' || d.action === 'allow' || d.action === 'answer';

type Fields = Omit<Pending, 'id' | 'kind' | 'createdAt'>;

/** A request the phone answered for the lost runner, kept to answer the resumed agent's identical one once. */
export interface Answered {
  pending: Pending;
  decision: Decision;
}

const decidedEvent = (kind: Kind, decision: Decision): Event => ({
  type: 'Decided',
  kind,
  approved: isApproval(decision),
  ...(decision.action === 'revise' ? { revise: true } : {}),
});

const fieldsOf = ({ id: _id, kind: _kind, createdAt: _at, ...fields }: Pending): Fields => fields;
/** As stored on the Session (its keys in another order, undefined ones absent) and as raised now. */
const sameRequest = (answered: Pending, kind: Kind, fields: Fields) =>
  answered.kind === kind && isDeepStrictEqual(fieldsOf(answered), JSON.parse(JSON.stringify(fields)));

export function waitForDecision(status: StatusWriter, requestId: string, signal: AbortSignal): Promise<Decision> {
  return new Promise((resolve, reject) => {
    const check = (session: Session | undefined) => {
      const found = session?.spec.decisions?.find((d) => d.requestId === requestId);
      if (!found) return false;
      done();
      resolve(found);
      return true;
    };
    const onAbort = () => {
      done();
      reject(new Stopped(String(signal.reason ?? 'stopped')));
    };
    const unsubscribe = status.onChange((s) => void check(s));
    const done = () => {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    check(status.session);
  });
}

export class Requests {
  private readonly status: StatusWriter;
  private readonly stop: AbortSignal;
  /** One request open at a time. */
  private readonly queue = pLimit(1);
  private answered: Answered | undefined;

  constructor(status: StatusWriter, stop: AbortSignal, answered?: Answered) {
    this.status = status;
    this.stop = stop;
    this.answered = answered;
  }

  /**
   * Raises a request and waits for its decision. `beforeRecord` gets the decision's effects before
   * the phase change is written (RevertWorkspace: revert the tree before writing Rejected).
   */
  raise(kind: Kind, fields: Fields, beforeRecord?: BeforeRecord): Promise<Decided> {
    return this.queue(() => this.raiseNow(kind, fields, beforeRecord));
  }

  /**
   * A request its asker may take back (egress: the proxy dropped its ask): not raised once `withdrawn` has
   * aborted, and taken off the Session (back to Working) when it aborts before the phone answers; undefined then.
   */
  raiseUnless(kind: Kind, fields: Fields, withdrawn: AbortSignal): Promise<Decided | undefined> {
    return this.queue(async () => {
      if (withdrawn.aborted) return undefined;
      try {
        return await this.raiseNow(kind, fields, undefined, AbortSignal.any([this.stop, withdrawn]));
      } catch (error) {
        if (!(error instanceof Stopped) || this.stop.aborted || !withdrawn.aborted) throw error;
        this.status.setPending(null);
        await this.status.move({ type: 'RequestWithdrawn' });
        return undefined;
      }
    });
  }

  /** The request the lost runner raised, still open on the Session: its answer, recorded as raise() records it. */
  adopt(pending: Pending, beforeRecord?: BeforeRecord): Promise<Decided> {
    return this.queue(() => this.decide(pending, beforeRecord));
  }

  private async raiseNow(
    kind: Kind,
    fields: Fields,
    beforeRecord?: BeforeRecord,
    signal = this.stop,
  ): Promise<Decided> {
    if (this.stop.aborted) throw new Stopped(String(this.stop.reason));
    const replayed = this.replay(kind, fields);
    if (replayed) return replayed;
    const pending: Pending = {
      id: `${kind}-${randomBytes(4).toString('hex')}`,
      kind,
      ...fields,
      createdAt: this.status.clock().toISOString(),
    };
    this.status.setPending(pending);
    await this.status.move({ type: 'RequestRaised', kind });
    return this.decide(pending, beforeRecord, signal);
  }

  private async decide(pending: Pending, beforeRecord?: BeforeRecord, signal = this.stop): Promise<Decided> {
    const decision = await waitForDecision(this.status, pending.id, signal);
    const decided = decidedEvent(pending.kind, decision);
    const step = transition(this.status.phase, decided);
    const effects = step.ok ? step.effects : [];
    await beforeRecord?.(effects);
    this.status.setPending(null);
    await this.status.move(decided);
    return { decision, effects };
  }

  /** The earlier answer, once, when the resumed agent asks exactly what the phone already answered; nothing written. */
  private replay(kind: Kind, fields: Fields): Decided | undefined {
    const answered = this.answered;
    if (!answered || !sameRequest(answered.pending, kind, fields)) return undefined;
    this.answered = undefined;
    const step = transition('AwaitingApproval', decidedEvent(kind, answered.decision));
    return { decision: answered.decision, effects: step.ok ? step.effects : [] };
  }
}

const cut = (s: unknown, max: number) => (typeof s === 'string' ? s.slice(0, max) : '');

/** AskUserQuestion input → status.pending.questions (bounded to the schema's limits). */
export function pendingQuestions(input: Record<string, unknown>): NonNullable<Pending['questions']> {
  const raw = Array.isArray(input.questions) ? input.questions : [];
  return raw.slice(0, LIMITS.questions).map((q: Record<string, unknown>) => ({
    question: cut(q?.question, 1000),
    ...(typeof q?.header === 'string' ? { header: cut(q.header, 100) } : {}),
    multiSelect: q?.multiSelect === true,
    options: (Array.isArray(q?.options) ? q.options : [])
      .slice(0, LIMITS.options)
      .map((o: Record<string, unknown>) => ({
        label: cut(o?.label, 200),
        ...(typeof o?.description === 'string' ? { description: cut(o.description, 1000) } : {}),
      })),
  }));
}

/** The decision's answers as AskUserQuestion expects them; a bare message answers the first question. */
export function answersFrom(decision: Decision, questions: NonNullable<Pending['questions']>): Record<string, string> {
  const answers = Object.fromEntries(Object.entries(decision.answers ?? {}).filter(([, a]) => a.trim()));
  if (Object.keys(answers).length === 0 && decision.message?.trim() && questions[0])
    answers[questions[0].question] = decision.message.trim();
  return answers;
}
