// A phone's Sessions as the relay sees them: the informer's cache plus Sessions it just created.
import { arrivedAt, byArrival } from '../../common/session/order.ts';
import { isActive, isTerminal } from '../../common/session/state-machine.ts';
import type { Session } from '../../common/session/schema.ts';
import type { SessionStore } from '../session-store.ts';
import type { PhoneContext } from './router.ts';

/** How long a Session this relay created is kept in view without the informer having it. */
const REMEMBERED_MS = 60_000;

export class PhoneView {
  /** phone → key → Session, kept from the informer's changes (subscribe before it starts) */
  private readonly byPhone = new Map<string, Map<string, Session>>();
  private readonly recent = new Map<string, Map<string, Session>>();
  private readonly inbound = new Map<string, number>();
  private readonly now: () => number;

  /** `now`: the clock, epoch ms (default Date.now) */
  constructor(store: SessionStore, now: () => number = Date.now) {
    this.now = now;
    const phoneOf = new Map<string, string>();
    store.onChange((key, session) => {
      const before = phoneOf.get(key);
      if (before !== undefined && !session) {
        phoneOf.delete(key);
        this.byPhone.get(before)?.delete(key);
        if (this.byPhone.get(before)?.size === 0) this.byPhone.delete(before);
      }
      if (!session) return;
      phoneOf.set(key, session.spec.phone); // spec.phone is immutable
      const sessions = this.byPhone.get(session.spec.phone) ?? new Map<string, Session>();
      sessions.set(key, session);
      this.byPhone.set(session.spec.phone, sessions);
    });
  }

  /** Remembers a Session this relay created until the informer has caught up with it. */
  remember(session: Session): void {
    const mine = this.recent.get(session.spec.phone) ?? new Map<string, Session>();
    mine.set(session.metadata.name!, session);
    this.recent.set(session.spec.phone, mine);
  }

  noteInbound(phone: string, at = this.now()): void {
    this.inbound.set(phone, at);
  }

  sessions(phone: string): Session[] {
    const all = new Map<string, Session>();
    for (const s of this.byPhone.get(phone)?.values() ?? []) all.set(s.metadata.name!, s);
    const recent = this.recent.get(phone);
    for (const [name, s] of recent ?? []) {
      if (all.has(name) || this.now() - arrivedAt(s) > REMEMBERED_MS) recent!.delete(name);
      else all.set(name, s);
    }
    if (recent?.size === 0) this.recent.delete(phone);
    return [...all.values()].sort(byArrival);
  }

  context(phone: string): PhoneContext & { session?: Session; open: Session[] } {
    const open = this.sessions(phone).filter((s) => !isTerminal(s.status?.phase));
    const session = open.find((s) => isActive(s.status?.phase)) ?? open.find((s) => s.status?.phase === undefined);
    const current = session && {
      name: session.metadata.name!,
      phase: session.status?.phase,
      pending: session.status?.pending,
    };
    return { open, session, queued: open.length - (session ? 1 : 0), current };
  }

  /**
   * The agent conversation to continue: the newest agentSessionId of this phone (in this workspace,
   * under any of its names, and repository, when given); with `pr`, of the pull request's Sessions
   * when one of them has it.
   */
  resumeId(phone: string, where?: { workspaces: string[]; url: string; pr?: number }): string | undefined {
    const same = (s: Session) =>
      !where || (where.workspaces.includes(s.spec.workspace) && s.spec.repo.url === where.url);
    const ids = (list: Session[]) =>
      list
        .map((s) => s.status?.result?.agentSessionId)
        .filter(Boolean)
        .at(-1);
    const mine = this.sessions(phone).filter(same);
    const pr = where?.pr;
    const ofPull = (s: Session) => s.status?.result?.prNumber === pr || s.spec.pullRequest?.number === pr;
    return (pr !== undefined ? ids(mine.filter(ofPull)) : undefined) ?? ids(mine);
  }

  /** When the phone last wrote: in memory, else its newest Session or decision (survives restarts). */
  lastInboundAt(phone: string): number | undefined {
    let last = this.inbound.get(phone);
    for (const s of this.sessions(phone)) {
      for (const at of [arrivedAt(s), ...(s.spec.decisions ?? []).map((d) => new Date(d.at).getTime())]) {
        if (last === undefined || at > last) last = at;
      }
    }
    return last;
  }
}
