// The relay's GitHub REST side as its configuration makes it (for startRelay): the client when a
// token file is set, the Merger when the install allows merging, and the poll when it is on.
import type { Logger } from 'pino';
import type { Redactor } from '../../common/log.ts';
import type { githubConfig } from '../config-github.ts';
import type { PullRecords } from '../pulls/types.ts';
import { GitHubClient } from './client.ts';
import { mergerFor, type GitHubMerger } from './merge.ts';
import { GitHubPoll, type PullEventSink } from './poll.ts';

export interface GitHubRest {
  /** for GithubPullActions' `merger`; absent: *merge* says merging is off */
  merger?: GitHubMerger;
  /** starts the poll's rounds when it is on; stop() waits for a round under way */
  start(logger: Logger): { stop(): Promise<void> };
}

export function githubRest(
  settings: ReturnType<typeof githubConfig>,
  parts: { records: PullRecords; onEvent: PullEventSink; redact: Redactor },
): GitHubRest {
  const client = settings.client && new GitHubClient(settings.client, parts.redact);
  const poll =
    client && settings.poll
      ? new GitHubPoll({ client, records: parts.records, onEvent: parts.onEvent, settings: settings.poll })
      : undefined;
  return {
    merger: mergerFor(settings.merge, client, parts.records),
    start: (logger) => poll?.start(logger) ?? { stop: async () => undefined },
  };
}
