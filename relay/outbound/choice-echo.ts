// Repeating the choice: after a tool request or a question is answered (typed or tapped), the
// next message the phone gets starts with what was chosen ("You chose 2 (Postgres)."). When
// nothing follows within ECHO_WAIT_MS and no message is on its way, the echo goes out on its own. Pure.
import type { Decision, Pending, Session } from '../../common/session/schema.ts';
import type { Asked, Delivered } from '../delivered-state.ts';
import { budgetsOf } from './cadence.ts';
import { text } from '../text.ts';
import { destination } from '../egress-text.ts';
import type { Part, OwedOptions } from './owed.ts';

/** An option label as the delivered record keeps it (the annotation stays small). */
const KEPT_LABEL_CHARS = 60;

/** How long an echo waits for a message to ride on before it is sent alone. */
export const ECHO_WAIT_MS = 10_000;
/** How long it waits when a message is on its way (messageOnItsWay): then it goes alone whatever is coming. */
export const ECHO_LONGEST_WAIT_MS = 60_000;

/** What the delivered record keeps of a request shown, to say later what was chosen. */
export function askedOf(pending: Pending): Asked {
  const questions = pending.questions ?? [];
  return {
    id: pending.id,
    ...(pending.kind === 'tool' && pending.tool ? { tool: pending.tool.slice(0, 64) } : {}),
    ...(pending.kind === 'egress' ? { host: destination(pending) } : {}),
    ...(questions.length === 1
      ? { options: questions[0]!.options.map((o) => o.label.slice(0, KEPT_LABEL_CHARS)) }
      : {}),
  };
}

/** The words for a decision, or undefined for decisions whose next message says it all (approve, reject). */
export function echoText(decision: Decision, asked: Asked | undefined): string | undefined {
  const shown = asked?.id === decision.requestId ? asked : undefined;
  switch (decision.action) {
    case 'allow':
      if (shown?.host !== undefined || decision.scope === 'repository')
        return text.echoAllowedHost(shown?.host, decision.scope);
      return text.echoAllowed(shown?.tool, decision.scope === 'session');
    case 'deny':
      return text.echoDenied(decision.message);
    case 'answer': {
      const labels = Object.values(decision.answers ?? {});
      const index =
        labels.length === 1 && !decision.message
          ? (shown?.options?.indexOf(labels[0]!.slice(0, KEPT_LABEL_CHARS)) ?? -1)
          : -1;
      return index >= 0
        ? text.echoChose(index + 1, labels[0]!)
        : text.echoAnswered(decision.message ?? labels.join(', '));
    }
    default:
      return undefined;
  }
}

/**
 * A message the phone will get without anything new happening: progress the cadence holds back
 * (it goes at its turn), or the run's ending — the agent has finished (its exit code is recorded)
 * and the runner is preparing the review or the result.
 */
export function messageOnItsWay(session: Session, told: Delivered, options: OwedOptions): boolean {
  const status = session.status ?? {};
  if (status.phase !== 'Working') return false;
  if (status.result?.exitCode !== undefined) return true;
  const held = (status.progress ?? []).some((p) => p.seq > told.seq);
  return held && (told.progressSent ?? 0) < budgetsOf(options).progressMessages;
}

/**
 * Puts the echo of the newest decision in front of the parts, or alone once it has waited
 * ECHO_WAIT_MS with nothing on its way (`onItsWay`: ECHO_LONGEST_WAIT_MS); `echoed` is the
 * request id to record as echoed, `wakeAt` when to look again.
 */
export function withEcho(
  session: Session,
  told: Delivered,
  parts: Part[],
  now: number,
  onItsWay = false,
): { parts: Part[]; echoed?: string; wakeAt?: number } {
  const decision = session.spec.decisions?.at(-1);
  if (!decision || decision.requestId === told.echoed) return { parts };
  const words = told.done ? undefined : echoText(decision, told.asked);
  if (!words) return { parts, echoed: decision.requestId };
  if (parts.length) {
    const [first, ...rest] = parts;
    return {
      parts: [{ ...first, text: first!.text ? `${words}\n${first!.text}` : words }, ...rest],
      echoed: decision.requestId,
    };
  }
  const dueAt = new Date(decision.at).getTime() + (onItsWay ? ECHO_LONGEST_WAIT_MS : ECHO_WAIT_MS);
  if (now >= dueAt) return { parts: [{ text: words }], echoed: decision.requestId };
  return { parts, wakeAt: dueAt };
}
