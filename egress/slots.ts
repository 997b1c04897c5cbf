// Who holds the proxy's open client connections, so that no one caller starves the others: a connection
// is unauthenticated until a request on it shows a credential (a small share of the total, closed after
// a short time), then it belongs to that caller — one Session's agent, one runner Pod's supervisor —
// each with a cap of its own below the total (TETHER_EGRESS_MAX_CONNECTIONS, server.maxConnections).
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
  otherCaller: 'one connection to the proxy carries the requests of one caller; open another connection',
} as const;

export class Slots {
  private readonly limits: SlotLimits;
  private unauthenticated = 0;
  private readonly counts = new Map<string, number>();
  private readonly held = new WeakMap<Socket, Held>();

  constructor(limits: SlotLimits) {
    this.limits = limits;
  }

  /** A new client connection: false (close it) when the unauthenticated share is full. */
  accept(socket: Socket): boolean {
    if (this.unauthenticated >= this.limits.maxUnauthenticated) return false;
    this.unauthenticated++;
    const held: Held = { timer: setTimeout(() => socket.destroy(), this.limits.unauthenticatedMs) };
    this.held.set(socket, held);
    socket.once('close', () => this.release(held));
    return true;
  }

  /** A request on the socket showed the caller's credential: the slot is the caller's, or why not. */
  claim(socket: Socket, caller: Caller): string | undefined {
    const held = this.held.get(socket);
    if (!held) return undefined;
    const owner = ownerOf(caller);
    if (held.owner !== undefined) return held.owner === owner ? undefined : SLOT_REASONS.otherCaller;
    const cap =
      caller.kind === 'agent' ? this.limits.maxConnectionsPerSession : this.limits.maxConnectionsPerSupervisor;
    if ((this.counts.get(owner) ?? 0) >= cap) return SLOT_REASONS.tooMany(caller, cap);
    clearTimeout(held.timer);
    this.unauthenticated--;
    held.owner = owner;
    this.counts.set(owner, (this.counts.get(owner) ?? 0) + 1);
    return undefined;
  }

  private release(held: Held): void {
    clearTimeout(held.timer);
    if (held.owner === undefined) {
      this.unauthenticated--;
      return;
    }
    const left = (this.counts.get(held.owner) ?? 1) - 1;
    if (left > 0) this.counts.set(held.owner, left);
    else this.counts.delete(held.owner);
  }
}
