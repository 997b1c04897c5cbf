// The `tether.dev/delivered` annotation: what the phone has been told about one Session.
// The inbound side writes the first one (when it creates the Session), the outbound side the rest.
import { ANNOTATION_DELIVERED } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';

/** A request shown, as much of it as saying later what was chosen needs. */
export interface Asked {
  id: string;
  /** kind tool: the tool's name */
  tool?: string;
  /** kind egress: the destination as shown ("pypi.org", "example.com:8080") */
  host?: string;
  /** a single question: its option labels, in order */
  options?: string[];
}

/** `n` counts writes so the newest copy wins between the informer cache and the relay's own last write. */
export interface Delivered {
  n: number;
  /** the user was told the command started ("On it"), or that it was queued */
  started?: boolean;
  queued?: boolean;
  /** highest status.progress seq sent (or passed over: past the run's progress budget) */
  seq: number;
  /** progress messages of their own sent for this run, and when the last one went (epoch ms) */
  progressSent?: number;
  progressAt?: number;
  /** messages planned for this Session in all; capped: the user was told the Session reached its budget */
  messages?: number;
  capped?: boolean;
  /** id of the last pending request shown, and of the last one reminded about */
  pending?: string;
  reminded?: string;
  /** the last request shown, and the last decision whose choice was repeated to the phone (outbound/choice-echo.ts) */
  asked?: Asked;
  echoed?: string;
  /** terminal phase reported */
  done?: string;
  /** `diff <file>` requests whose pages were sent (status.result.diffAnswered) */
  diffs?: number;
  /**
   * A prompt being sent: `pending` is set to its id only after the send, so a relay that dies in
   * between leaves this behind and the prompt is sent again (by `by` when it restarts, by any
   * replica once `at` is older than the lease). Progress is recorded before its send: at most once.
   */
  sending?: { id: string; at: number; by: string };
}

export function readDelivered(session: Session): Delivered {
  const raw = session.metadata.annotations?.[ANNOTATION_DELIVERED];
  if (!raw) return { n: 0, seq: 0 };
  try {
    const parsed = JSON.parse(raw) as Partial<Delivered>;
    return { ...parsed, n: Number(parsed.n) || 0, seq: Number(parsed.seq) || 0 };
  } catch {
    return { n: 0, seq: 0, started: true }; // unreadable: assume the start was announced, resend the rest
  }
}

export const writeDelivered = (d: Delivered) => JSON.stringify(d);

/** Whether the request went to the phone (or is being sent): only then can a reply have been meant for it. */
export function sentToPhone(session: Session, requestId: string): boolean {
  const delivered = readDelivered(session);
  return delivered.pending === requestId || delivered.sending?.id === requestId;
}
