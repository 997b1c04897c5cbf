// Who holds the proxy's open client connections, so that no one caller starves the others: a connection
// is unauthenticated until a request on it shows a credential (a small share of the total: past it the
// oldest such connection is closed, so idle ones cannot keep a client that sends its credential at once
// out; each closed after a short time), then it belongs to that caller — one Session's agent, one runner
// Pod's supervisor — each with a cap of its own below the total (TETHER_EGRESS_MAX_CONNECTIONS).
import type { Socket } from 'node:net';
import type { Caller } from './callers.ts';

export interface SlotLimits {
  maxConnectionsPerSession: number;
  maxConnectionsPerSupervisor: number;
  maxUnauthenticated: number;
  unauthenticatedMs: number;
}

interface Held {
  /** The caller holding it; undefined while unauthenticated. */
  owner?: string;
  timer?: NodeJS.Timeout;
}

const ownerOf = (caller: Caller) => (caller.kind === 'agent' ? `agent/${caller.session}` : `supervisor/${caller.pod}`);

export const SLOT_REASONS = {
  tooMany: (caller: Caller, cap: number) =>
    `${caller.kind === 'agent' ? 'this Session' : "this runner Pod's supervisor"} already has ${cap} connections ` +
    'open through the proxy; close one and try again',
} as const;

export class Slots {
  private readonly limits: SlotLimits;
  /** The unauthenticated connections, oldest first. */
  private readonly unauthenticated = new Set<Socket>();
  private readonly counts = new Map<string, number>();
  private readonly held = new WeakMap<Socket, Held>();

  constructor(limits: SlotLimits) {
    this.limits = limits;
  }

  /** A new client connection, unauthenticated; the oldest unauthenticated one closed past the share. */
  accept(socket: Socket): void {
    if (this.unauthenticated.size >= this.limits.maxUnauthenticated) {
      const oldest = this.unauthenticated.values().next().value!;
      this.unauthenticated.delete(oldest);
      oldest.destroy();
    }
    this.unauthenticated.add(socket);
    const held: Held = { timer: setTimeout(() => socket.destroy(), this.limits.unauthenticatedMs) };
    this.held.set(socket, held);
    socket.once('close', () => this.release(socket, held));
  }

  /** A request on the socket showed the caller's credential: the slot is the caller's, or why not. */
  claim(socket: Socket, caller: Caller): string | undefined {
    const held = this.held.get(socket);
    if (!held) return undefined;
    const owner = ownerOf(caller);
    if (held.owner === owner) return undefined;
    const cap =
      caller.kind === 'agent' ? this.limits.maxConnectionsPerSession : this.limits.maxConnectionsPerSupervisor;
    if ((this.counts.get(owner) ?? 0) >= cap) return SLOT_REASONS.tooMany(caller, cap);
    // A keep-alive connection reused with another caller's credential moves to that caller.
    if (held.owner !== undefined) this.uncount(held.owner);
    clearTimeout(held.timer);
    this.unauthenticated.delete(socket);
    held.owner = owner;
    this.counts.set(owner, (this.counts.get(owner) ?? 0) + 1);
    return undefined;
  }

  private release(socket: Socket, held: Held): void {
    clearTimeout(held.timer);
    if (held.owner === undefined) {
      this.unauthenticated.delete(socket);
      return;
    }
    this.uncount(held.owner);
  }

  private uncount(owner: string): void {
    const left = (this.counts.get(owner) ?? 1) - 1;
    if (left > 0) this.counts.set(owner, left);
    else this.counts.delete(owner);
  }
}
