// The GitHub side of the pull-request loop, assembled for startRelay (server.ts): the webhook
// (relay/github/wiring.ts), the poll when configured, the merger, and the actions that answer the
// notices' words over the records and the people map.
import type { Logger } from 'pino';
import { makeRedactor } from '../../common/log.ts';
import type { RelayConfig } from '../config.ts';
import { GithubPullActions } from '../github/actions.ts';
import { GitHubClient } from '../github/client.ts';
import { mergeRightsOf, mergerFor } from '../github/merge.ts';
import type { NotifierOptions } from '../github/notify.ts';
import { GitHubPoll } from '../github/poll.ts';
import type { GithubWebhookSettings } from '../github/webhook.ts';
import { openGithubWebhook } from '../github/wiring.ts';
import { reviewCommentCount } from '../github/reads.ts';
import type { People } from '../inbound/people.ts';
import type { PullActions, PullRecords } from './types.ts';

export interface GithubSide {
  /** for createApp's `github`: absent without a webhook secret (the route answers 404) */
  settings?: GithubWebhookSettings;
  actions: PullActions;
  /** once the records can be read: acts on journaled deliveries, starts the poll */
  start(): void;
  /** stops the poll, acts on what was received, closes the journal */
  close(): Promise<void>;
}

export interface GithubSideOptions extends Omit<NotifierOptions, 'records' | 'redact' | 'logger'> {
  config: RelayConfig;
  records: PullRecords;
  people: People;
  logger: Logger;
}

export async function openGithubSide(o: GithubSideOptions): Promise<GithubSide> {
  const { config, records, logger } = o;
  const redact = makeRedactor(config.secrets);
  const client = config.github.client && new GitHubClient(config.github.client, redact);
  const webhook = await openGithubWebhook({
    ...o,
    secret: config.githubWebhookSecret,
    journalDir: config.journalDir,
    maxBacklog: config.inboundBacklog,
    redact,
    countComments: client && ((event, reviewId) => reviewCommentCount(client, event, reviewId)),
  });
  const poll =
    client &&
    config.github.poll &&
    new GitHubPoll({
      client,
      records,
      settings: config.github.poll,
      onEvent: async (event) => void (await webhook.notifier.notify(event)),
      now: o.now,
    });
  const actions = new GithubPullActions({
    records,
    merger: mergerFor(config.github.merge, client, records),
    personOf: mergeRightsOf(o.people),
    now: o.now,
  });
  let polling: { stop(): Promise<void> } | undefined;
  return {
    settings: webhook.settings,
    actions,
    start() {
      webhook.replay();
      polling = poll ? poll.start(logger) : undefined;
    },
    async close() {
      await polling?.stop();
      await webhook.close();
    },
  };
}
