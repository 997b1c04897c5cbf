// Signed webhook deliveries, as GitHub sends them: a JSON POST with X-GitHub-Event,
// X-GitHub-Delivery (a GUID, kept on a redelivery) and X-Hub-Signature-256 (HMAC-SHA-256 of the
// body with the hook's secret). A non-2xx answer or a failed connection is retried with a doubling
// back-off; every attempt is logged. First attempts go out in the order the events happened.
import { createHmac, randomUUID } from 'node:crypto';

export interface WebhookHook {
  id: number;
  url: string;
  secret: string;
  /** Event names to send; every event when absent. */
  events?: string[];
}

export interface DeliveryAttempt {
  at: number;
  /** The HTTP status, or 0 when the connection failed. */
  status: number;
  error?: string;
}

export interface Delivery {
  /** The delivery's number (GitHub's delivery id in its REST API). */
  id: number;
  /** X-GitHub-Delivery: the same on a redelivery. */
  guid: string;
  hookId: number;
  event: string;
  action?: string;
  payload: Record<string, unknown>;
  redelivery: boolean;
  state: 'pending' | 'delivered' | 'failed';
  /** The last attempt's HTTP status (0: no connection). */
  statusCode?: number;
  attempts: DeliveryAttempt[];
}

export interface WebhookOptions {
  /** Attempts after the first one (default 3). */
  retries?: number;
  /** The first retry's delay; each next one doubles (default 500 ms). */
  backoffMs?: number;
  /** Per attempt (default 10 s, GitHub's own limit). */
  timeoutMs?: number;
}

export const signature = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

export class Webhooks {
  readonly hooks: WebhookHook[] = [];
  readonly deliveries: Delivery[] = [];
  private queue: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private nextId = 0;
  private closed = false;

  private readonly options: WebhookOptions;

  constructor(options: WebhookOptions = {}) {
    this.options = options;
  }

  add(hook: Omit<WebhookHook, 'id'>): WebhookHook {
    const added = { ...hook, id: this.hooks.length + 1 };
    this.hooks.push(added);
    return added;
  }

  /** Called with every event as it happens, before any delivery (the stand-in's own CI listens). */
  readonly listeners: Array<(event: string, payload: Record<string, unknown>) => void> = [];

  /** Sends one event to every hook that wants it. */
  emit(event: string, payload: Record<string, unknown>): Delivery[] {
    for (const listener of this.listeners) listener(event, payload);
    return this.hooks
      .filter((hook) => !hook.events || hook.events.includes(event))
      .map((hook) => this.start({ guid: randomUUID(), hookId: hook.id, event, payload, redelivery: false }));
  }

  /** Sends a delivery again (by its number or GUID) with the same GUID, as GitHub's redeliver does. */
  redeliver(idOrGuid: number | string): Delivery {
    const original = this.deliveries.find((d) => d.id === idOrGuid || d.guid === idOrGuid);
    if (!original) throw new Error(`no delivery ${idOrGuid}`);
    return this.start({ ...original, redelivery: true });
  }

  /** Resolves when no delivery is being sent or waiting for a retry. */
  async idle(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
  }

  private start(from: Pick<Delivery, 'guid' | 'hookId' | 'event' | 'payload' | 'redelivery'>): Delivery {
    const delivery: Delivery = {
      id: ++this.nextId,
      guid: from.guid,
      hookId: from.hookId,
      event: from.event,
      ...(typeof from.payload.action === 'string' ? { action: from.payload.action } : {}),
      payload: from.payload,
      redelivery: from.redelivery,
      state: 'pending',
      attempts: [],
    };
    this.deliveries.push(delivery);
    const done = new Promise<void>((resolve) => {
      this.queue = this.queue.then(() => this.attempt(delivery, 0, resolve));
    });
    this.track(done);
    return delivery;
  }

  private track(promise: Promise<void>): void {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise));
  }

  private async attempt(delivery: Delivery, retry: number, finished: () => void): Promise<void> {
    const hook = this.hooks.find((h) => h.id === delivery.hookId)!;
    const status = await this.post(hook, delivery);
    delivery.statusCode = status;
    const retries = this.options.retries ?? 3;
    if ((status >= 200 && status < 300) || this.closed || retry >= retries) {
      delivery.state = status >= 200 && status < 300 ? 'delivered' : 'failed';
      return finished();
    }
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        void this.attempt(delivery, retry + 1, finished);
      },
      (this.options.backoffMs ?? 500) * 2 ** retry,
    );
    this.timers.add(timer);
  }

  private async post(hook: WebhookHook, delivery: Delivery): Promise<number> {
    const body = JSON.stringify(delivery.payload);
    const at = Date.now();
    try {
      const response = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/stand-in',
          'x-github-event': delivery.event,
          'x-github-delivery': delivery.guid,
          'x-github-hook-id': String(hook.id),
          'x-hub-signature-256': signature(hook.secret, body),
        },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      await response.arrayBuffer();
      delivery.attempts.push({ at, status: response.status });
      return response.status;
    } catch (error) {
      delivery.attempts.push({ at, status: 0, error: (error as Error).message });
      return 0;
    }
  }
}
