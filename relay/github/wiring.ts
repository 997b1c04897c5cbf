// The GitHub webhook's parts, assembled for startRelay (server.ts): its journal (a folder of its
// own inside the inbound journal's volume), the deliveries, and the notifier the poll shares.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Redactor } from '../../common/log.ts';
import { Journal } from '../inbound/journal.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { PullRecords } from '../pulls/types.ts';
import { GithubDeliveries, type GithubDelivery } from './deliveries.ts';
import { PullNotifier, type NotifierOptions } from './notify.ts';
import type { GithubWebhookSettings } from './webhook.ts';

/** The GitHub journal's folder, inside the inbound journal's (the same volume). */
export const githubJournalDir = (inboundJournalDir: string) => join(inboundJournalDir, 'github');

export interface GithubWebhookOptions extends Omit<NotifierOptions, 'records'> {
  /** TETHER_GITHUB_WEBHOOK_SECRET; absent: no route (404), the notifier still serves the poll */
  secret?: string;
  records: PullRecords;
  /** RELAY_JOURNAL_DIR */
  journalDir: string;
  /** deliveries journaled and not acted on beyond which new ones get 503 (RELAY_INBOUND_BACKLOG) */
  maxBacklog: number;
  metrics: RelayMetrics;
  logger: Logger;
  redact: Redactor;
}

export interface GithubWebhook {
  /** for createApp's `github` */
  settings?: GithubWebhookSettings;
  notifier: PullNotifier;
  deliveries: GithubDeliveries;
  /** acts on what a previous run journaled and did not finish (call once the records can be read) */
  replay(): number;
  /** waits for what was received to be acted on, then closes the journal */
  close(): Promise<void>;
}

export async function openGithubWebhook(options: GithubWebhookOptions): Promise<GithubWebhook> {
  const journal = await Journal.open<GithubDelivery>(githubJournalDir(options.journalDir));
  const notifier = new PullNotifier(options);
  const deliveries = new GithubDeliveries({
    journal,
    notifier,
    maxBacklog: options.maxBacklog,
    metrics: options.metrics,
    logger: options.logger,
  });
  return {
    settings: options.secret ? { secret: options.secret, deliveries } : undefined,
    notifier,
    deliveries,
    replay: () => deliveries.replay(),
    async close() {
      await deliveries.idle();
      await journal.close();
    },
  };
}
