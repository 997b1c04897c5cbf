// Makes the pull-request records: a phone's Session that reaches Succeeded with result.prNumber
// opened a pull request (a record is made) or added to one (it becomes the phone's current one
// again). Level-based and idempotent: the record's chosenAt is the Session's completion time, so
// seeing a Session again (a restart's initial list, another replica) writes nothing.
import type { Logger } from 'pino';
import { createWorkQueue, type WorkQueue } from '../../common/kube/work-queue.ts';
import { LABEL_REPO } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import type { NamedRepo } from '../repo-list.ts';
import type { SessionStore } from '../session-store.ts';
import type { PullRecord, PullRecords } from './types.ts';

/** Retry after a failed write: 500 ms, doubling, at most 30 s. */
const RETRY = { baseDelayMs: 500, maxDelayMs: 30_000 };

/** owner, repository and number from a pull request's web page: https://host/owner/repo/pull/n */
export function pullOfUrl(url: string): { owner: string; repo: string; number: number } | undefined {
  const match = /^https?:\/\/[^/?#]+\/(?:.*\/)?([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)\/pull\/(\d{1,10})\/?$/.exec(url);
  return match ? { owner: match[1]!, repo: match[2]!, number: Number(match[3]) } : undefined;
}

/** owner/repo of a repository URL (https://host/owner/repo.git, git@host:owner/repo.git), lowercased. */
const slugOf = (url: string) =>
  url
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .split(/[/:]/)
    .slice(-2)
    .join('/')
    .toLowerCase();

/**
 * The record a Session that opened or added to a pull request makes (or refreshes); undefined: none.
 * A pull request of another repository than the Session's is never recorded: the phone would hear
 * of it, and *fix* or *merge* would act on it.
 */
export function recordOf(session: Session, repos: readonly NamedRepo[]): PullRecord | undefined {
  const r = session.status?.result;
  if (session.status?.phase !== 'Succeeded' || !r?.prNumber || !r.prUrl) return undefined;
  const where = pullOfUrl(r.prUrl);
  if (!where || where.number !== r.prNumber) return undefined;
  if (`${where.owner}/${where.repo}`.toLowerCase() !== slugOf(session.spec.repo.url)) return undefined;
  const repoName =
    session.metadata.labels?.[LABEL_REPO] ?? repos.find((x) => x.url === session.spec.repo.url)?.name ?? '';
  const chosenAt = String(session.status?.completionTime ?? session.metadata.creationTimestamp ?? '');
  return {
    ...where,
    url: r.prUrl,
    branch: r.branch ?? session.spec.pullRequest?.branch ?? '',
    repoName,
    repoUrl: session.spec.repo.url,
    phone: session.spec.phone,
    state: 'open',
    ...(r.commit ? { headSha: r.commit } : {}),
    chosenAt: new Date(chosenAt).toISOString(),
    notices: [],
    seen: [],
  };
}

/** The stored record with what a later Session says: a newer head and choice; its state and history kept. */
export function refreshed(stored: PullRecord | undefined, made: PullRecord): PullRecord {
  if (!stored) return made;
  if (stored.chosenAt >= made.chosenAt) return stored;
  return { ...stored, chosenAt: made.chosenAt, ...(made.headSha ? { headSha: made.headSha } : {}) };
}

export interface PullRecorderOptions {
  store: SessionStore;
  records: PullRecords;
  repos: readonly NamedRepo[];
  logger: Logger;
}

export class PullRecorder {
  private readonly o: PullRecorderOptions;
  private readonly queue: WorkQueue;
  /** Sessions recorded by this process: their later changes need no look at the records */
  private readonly recorded = new Set<string>();

  constructor(options: PullRecorderOptions) {
    this.o = options;
    this.queue = createWorkQueue({
      ...RETRY,
      concurrency: 1,
      handler: async (key) => {
        const session = options.store.get(key);
        if (session) await this.record(session);
      },
      hooks: {
        retry: (key, retryInMs, err) =>
          options.logger.warn({ session: key.split('/')[1], err, retryInMs }, 'pull request record failed; retrying'),
      },
    });
  }

  /** Subscribes to the store; call before the informer starts. */
  start(): void {
    this.o.store.onChange((key, session) => {
      if (!session) this.recorded.delete(key);
      else if (!this.recorded.has(key) && recordOf(session, this.o.repos)) this.queue.add(key);
    });
    this.queue.start();
  }

  stop(): Promise<void> {
    return this.queue.stop();
  }

  /** Records the phone's Sessions not yet recorded: a command waits for it, so it sees the PR it follows. */
  async catchUp(sessions: readonly Session[]): Promise<void> {
    for (const session of sessions) await this.record(session);
  }

  private async record(session: Session): Promise<void> {
    const key = `${session.metadata.namespace}/${session.metadata.name}`;
    if (this.recorded.has(key)) return;
    const made = recordOf(session, this.o.repos);
    if (!made) return;
    const stored = await this.o.records.update(made.owner, made.repo, made.number, (current) =>
      refreshed(current, made),
    );
    this.recorded.add(key);
    if (stored?.chosenAt === made.chosenAt)
      this.o.logger.info({ session: session.metadata.name, pr: made.number }, 'pull request recorded');
  }
}
