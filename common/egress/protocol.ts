// What the egress proxy and a runner's supervisor say to each other. The supervisor opens one stream
// per Session it runs (GET, the supervisor's own credential as Basic authorization, not as a proxy
// credential) and reads newline-delimited JSON events; it answers an ask with one POST. Both are
// served on the proxy's own port, next to the proxying (CONNECT and absolute-form requests).

/** GET: the Session's events, newline-delimited JSON (EgressEvent), until either side closes. */
export const eventsPath = (session: string) => `/v1/sessions/${encodeURIComponent(session)}/events`;
/** POST: an AskAnswer; 204 when taken, 404 when the ask is no longer open. */
export const answersPath = (session: string) => `/v1/sessions/${encodeURIComponent(session)}/answers`;

/** What the phone answered; `deny` before any allow. */
export const GRANTS = ['once', 'session', 'repository', 'deny'] as const;
export type Grant = (typeof GRANTS)[number];

/** The agent tried a destination nobody listed: ask the phone. Asks for one host:port are one ask. */
export interface AskEvent {
  type: 'ask';
  /** Unique within the proxy; the supervisor names it in its answer. */
  id: string;
  host: string;
  port: number;
  /** CONNECT, or the plain-HTTP method. */
  method: string;
}

/** One connection ended (or was refused): for the Session's status records. */
export interface ConnectionEvent {
  type: 'connection';
  caller: 'agent' | 'supervisor';
  host: string;
  port: number;
  allowed: boolean;
  /** Bytes both ways (0 when refused). */
  bytes: number;
  /** Why it was refused, in words the agent was also given. */
  reason?: string;
  at: string;
}

/** Sent every EGRESS_PING_MS so either side notices a dead stream. */
export interface PingEvent {
  type: 'ping';
}

export type EgressEvent = AskEvent | ConnectionEvent | PingEvent;

export interface AskAnswer {
  id: string;
  grant: Grant;
}

export const EGRESS_PING_MS = 15_000;
