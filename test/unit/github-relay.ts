// A relay app with only its GitHub webhook set up, over real HTTP on loopback and the real journal
// on disk; the notices it sends are kept in `sent`. The webhook tests and bench/github-webhook.ts.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { makeRedactor } from '../../common/log.ts';
import { createApp } from '../../relay/app.ts';
import { GithubDeliveries, type GithubDelivery } from '../../relay/github/deliveries.ts';
import { PullNotifier } from '../../relay/github/notify.ts';
import { Journal } from '../../relay/inbound/journal.ts';
import { MediaStore } from '../../relay/media/store.ts';
import { createMetrics } from '../../relay/metrics.ts';
import type { Part } from '../../relay/outbound/owed.ts';
import { PhoneLanes } from '../../relay/phone-lane.ts';
import type { PullRecords } from '../../relay/pulls/types.ts';
import { MemoryRecords, PHONE, SECRET, pullRecord } from './github-fixtures.ts';

export interface GithubRelay<R extends PullRecords = MemoryRecords> {
  base: string;
  sent: Array<{ phone: string; parts: Part[] }>;
  records: R;
  journal: Journal<GithubDelivery>;
  deliveries: GithubDeliveries;
  metrics: ReturnType<typeof createMetrics>;
  close(): Promise<void>;
}

/** `records`: MemoryRecords of one pull request (acme/web#7, PHONE's) unless given. */
export async function startGithubRelay<R extends PullRecords = MemoryRecords>(
  o: {
    dir?: string;
    records?: R;
    secret?: string | null;
    failing?: boolean;
    maxBacklog?: number;
    retryForMs?: number;
  } = {},
): Promise<GithubRelay<R>> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'gh-journal-'));
  const records = o.records ?? (new MemoryRecords([pullRecord()]) as PullRecords as R);
  const metrics = createMetrics();
  const logger = pino({ level: 'silent' });
  const sent: GithubRelay['sent'] = [];
  const notifier = new PullNotifier({
    records,
    outbox: { deliver: async (phone, parts) => void sent.push({ phone, parts }) },
    lanes: new PhoneLanes(),
    isRecipient: (phone) => phone === PHONE,
    redact: makeRedactor([SECRET]),
    metrics,
    logger,
  });
  const failing = { notify: () => Promise.reject(new Error('the process dies before acting')) };
  const journal = await Journal.open<GithubDelivery>(dir);
  const deliveries = new GithubDeliveries({
    journal,
    notifier: o.failing ? failing : notifier,
    maxBacklog: o.maxBacklog ?? 5000,
    retryForMs: o.retryForMs ?? 0,
    metrics,
    logger,
  });
  deliveries.replay();
  const app = createApp({
    github: o.secret === null ? undefined : { secret: o.secret ?? SECRET, deliveries },
    inbound: { receive: async () => 'recorded' },
    media: new MediaStore({ dir: mkdtempSync(join(tmpdir(), 'media-')), maxBytes: 1024, ttlMs: 60_000 }),
    mediaSigningKey: 'k'.repeat(32),
    mediaMaxBytes: 1024,
    authorizer: { mayUpload: async () => false },
    metrics,
    logger,
    ready: () => true,
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const relay: GithubRelay<R> = {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    records,
    journal,
    deliveries,
    metrics,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await deliveries.idle();
      await journal.close();
    },
  };
  return relay;
}
