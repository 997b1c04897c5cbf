// A relay app serving only its media routes, on 127.0.0.1, for tests of a runner's reads: Sessions
// in namespace "ns"; the token "runner:<session>" belongs to that Session's runner.
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../relay/app.ts';
import type { MediaStore } from '../../relay/media/store.ts';
import { createMetrics } from '../../relay/metrics.ts';

export async function startMediaRelay(
  media: MediaStore,
  ratePerMinute = 1000,
): Promise<{ url: string; close(): Promise<void> }> {
  const app = createApp({
    inbound: { receive: async () => 'recorded' },
    media,
    mediaSigningKey: 'k'.repeat(32),
    mediaMaxBytes: 4096,
    namespace: 'ns',
    uploads: {
      sessionFiles: 3,
      sessionBytes: 7000,
      ratePerMinute,
      concurrency: 2,
      timeoutMs: 1500,
      review: { okTtlMs: 1000, failureTtlMs: 1000, maxEntries: 10 },
    },
    metrics: createMetrics(),
    logger: pino({ level: 'silent' }),
    ready: () => true,
    authorizer: { mayUpload: async (token, _ns, session) => token === `runner:${session}` },
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
