// The relay's one de-duplication rule. Twilio may deliver a message more than once, and a relay that
// restarts replays what its journal holds; every copy of a message id after the first is answered as
// a duplicate and changes nothing.
//
// THE RULE: a message id changes state at most once, across replicas and restarts. Its record is
//   - for a new command (start, queue): the Session, whose name is derived from the id (names.ts);
//   - for any other message that changes state (an answer, cancel, diff, …): its entry in the
//     shared claims ConfigMap (claims.ts);
//   - for a reply that depends on nothing (help, status, …): none; a copy only repeats the reply.
// A record made by this relay's own journal (a replay after a restart) lets the message be acted on
// again: the run before the restart may have died between the record and the reply.
// In front of the records, this replica remembers the ids it has received (the last RECENT_IDS), so a
// copy arriving while or after the first is handled is acknowledged on the first's journal record
// without a round trip to the API server.
import { ANNOTATION_ACCEPTED_BY } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import type { MessageClaims } from './claims.ts';
import type { Route } from './router.ts';

/** Message ids this replica remembers having received. */
export const RECENT_IDS = 10_000;

/** Routes whose meaning does not depend on the phone's state: a copy only repeats a reply. */
const STATELESS = new Set<Route['kind']>([
  'help',
  'status',
  'empty',
  'repo',
  'unknownRepo',
  'repoUsage',
  'planUsage',
  'newUsage',
  'prs',
  'mediaRefused',
  'imageNotNow',
]);
/** Routes whose record is the Session they create. */
const CREATES = new Set<Route['kind']>(['start', 'queue']);

/** Thrown where a record shows the message was taken before; the pipeline answers it as a duplicate. */
export class Duplicate extends Error {}

export class Once {
  /** id → its journal record, in the order received */
  private readonly received = new Map<string, Promise<void>>();
  private readonly claims: MessageClaims;
  private readonly owner: string | undefined;

  /** `owner`: this relay's journal identity (absent: nothing counts as its own record). */
  constructor(claims: MessageClaims, owner?: string) {
    this.claims = claims;
    this.owner = owner;
  }

  /** The journal record of an earlier copy this replica received, or undefined for a first sight. */
  receivedBefore(id: string): Promise<void> | undefined {
    return this.received.get(id);
  }

  /** Remembers a received message with its journal record. */
  receive(id: string, recorded: Promise<void>): void {
    this.received.set(id, recorded);
    if (this.received.size > RECENT_IDS) this.received.delete(this.received.keys().next().value!);
  }

  /** Its record was never written (nothing acknowledged): a copy is a first sight again. */
  forget(id: string): void {
    this.received.delete(id);
  }

  /**
   * Takes the message's record, when its route has one apart from the Session: false when another
   * replica (or a journal other than this one) took it first. A command's record is taken by
   * creating its Session (createdBefore decides a copy).
   */
  async claim(id: string, route: Route): Promise<boolean> {
    if (STATELESS.has(route.kind) || CREATES.has(route.kind)) return true;
    return this.claims.claim(id);
  }

  /** A command whose Session exists already: its own journal's (answer again) or a copy's (Duplicate). */
  createdBefore(existing: Session | undefined): Session {
    const mine = this.owner && existing?.metadata.annotations?.[ANNOTATION_ACCEPTED_BY] === this.owner;
    if (!existing || !mine) throw new Duplicate();
    return existing;
  }

  /** The annotation that marks a Session as this journal's record. */
  get ownMark(): Record<string, string> {
    return this.owner ? { [ANNOTATION_ACCEPTED_BY]: this.owner } : {};
  }
}
