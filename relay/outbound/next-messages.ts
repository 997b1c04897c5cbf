// The outbound side's one decision: given a Session and what its phone has been told, the messages
// to send now, the delivered state to record, and when to look again. Pure; delivery.ts claims and sends.
import type { Session } from '../../common/session/schema.ts';
import type { Delivered } from '../delivered-state.ts';
import { askedOf, messageOnItsWay, withEcho } from './choice-echo.ts';
import { owed, type Owed, type OwedOptions } from './owed.ts';

/** owed(), with the request shown remembered (`asked`) and the echo of the newest decision added. */
export function nextMessages(session: Session, told: Delivered, options: OwedOptions): Owed {
  const planned = owed(session, told, options);
  const next = { ...planned.next };
  const pending = session.status?.pending;
  if (pending && next.pending === pending.id && told.pending !== pending.id) next.asked = askedOf(pending);
  const echo = withEcho(session, told, planned.parts, options.now, messageOnItsWay(session, told, options));
  if (echo.echoed) next.echoed = echo.echoed;
  if (next.n === told.n && JSON.stringify(next) !== JSON.stringify(planned.next)) next.n = told.n + 1;
  const wakeAt = echo.wakeAt === undefined ? planned.wakeAt : Math.min(planned.wakeAt ?? Infinity, echo.wakeAt);
  return { ...planned, parts: echo.parts, next, wakeAt };
}
