// A tapped button: its payload names the request it answers. It answers that request only while
// it is this phone's open request; otherwise (an old message, a replay, another phone's request,
// a payload this relay never wrote) the phone gets a plain reply and nothing changes. Pure.
import { parsePayload } from '../chat/buttons.ts';
import { route, type PhoneContext, type Route } from './router.ts';

export function routeTap(payload: string, context: PhoneContext, maxQueued: number): Route {
  const tap = parsePayload(payload);
  if (!tap) return { kind: 'badTap' };
  const current = context.current;
  if (current?.phase !== 'AwaitingApproval' || current.pending?.id !== tap.requestId) return { kind: 'stale' };
  const routed = route(tap.reply, context, maxQueued);
  // The reply words are the relay's own; anything but a decision on this request is refused the same way.
  return routed.kind === 'decide' && routed.decision.requestId === tap.requestId ? routed : { kind: 'stale' };
}
