// A tapped button: its payload names the request it answers. It answers that request only while
// it is this phone's open request; otherwise (an old message, a replay, another phone's request,
// a payload this relay never wrote) the phone gets a plain reply and nothing changes. A button on
// a pull request's notice (`<reply>:pr-…`) goes to the pull request's actions, unless a request is
// open: its words come first. Pure.
import { parsePayload, type Tap } from '../chat/buttons.ts';
import { isPullAction, NOTICE_ID } from '../pulls/keys.ts';
import { route, type PhoneContext, type Route } from './router.ts';

export function routeTap(payload: string, context: PhoneContext, maxQueued: number): Route {
  const tap = parsePayload(payload);
  if (!tap) return { kind: 'badTap' };
  if (NOTICE_ID.test(tap.requestId)) return routeNoticeTap(tap, context);
  const current = context.current;
  if (current?.phase !== 'AwaitingApproval' || current.pending?.id !== tap.requestId) return { kind: 'stale' };
  const routed = route(tap.reply, context, maxQueued);
  // The reply words are the relay's own; anything but a decision on this request is refused the same way.
  return routed.kind === 'decide' && routed.decision.requestId === tap.requestId ? routed : { kind: 'stale' };
}

function routeNoticeTap(tap: Tap, context: PhoneContext): Route {
  if (!isPullAction(tap.reply)) return { kind: 'badTap' };
  const pending = context.current?.phase === 'AwaitingApproval' ? context.current.pending : undefined;
  if (pending) return { kind: 'instructions', pending };
  return { kind: 'pull', action: tap.reply, noticeId: tap.requestId };
}
