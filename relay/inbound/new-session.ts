// A new command's Session: one write, named from the message id, so it is also the message's
// de-duplication record (once.ts). Pictures sent with the command are fetched and kept first.
// It continues the phone's open pull request in its repository unless it says `new` (or is a fix,
// which names its own); it says who asked (the people map) and from which channel.
import type { PhoneHash } from '../../common/session/phone-hash.ts';
import { ANNOTATION_RECEIVED_AT } from '../../common/session/order.ts';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { isAlreadyExists } from '../../common/kube/errors.ts';
import type { CostBudget } from '../../common/session/budget.ts';
import {
  ANNOTATION_DELIVERED,
  LABEL_PART_OF,
  LABEL_PHONE_HASH,
  LABEL_REPO,
  commandSessionName,
} from '../../common/session/names.ts';
import type { PullRequestRef } from '../../common/session/forge-schema.ts';
import type { Session, SessionImage, SessionSpec } from '../../common/session/schema.ts';
import { writeDelivered } from '../delivered-state.ts';
import type { NamedRepo } from '../repo-list.ts';
import type { SessionApi } from '../session-store.ts';
import type { ImageFailure, InboundImages } from './media-in.ts';
import type { InboundMessage } from './message.ts';
import type { Once } from './once.ts';
import type { PhoneRepos } from './phone-repos.ts';
import type { PhoneView } from './phone-view.ts';
import type { PullAnswers } from './pull-answers.ts';
import type { CommandOptions } from './router.ts';

export interface NewSessionDeps {
  sessions: SessionApi;
  phones: PhoneView;
  repos: PhoneRepos;
  once: Once;
  namespace: string;
  defaults: SessionDefaults;
  images?: InboundImages;
  cost?: CostBudget;
  now: () => number;
  /** the install's keyed phone hash: the Session's name and label */
  phoneHash: PhoneHash;
  /** the phone's pull requests: absent, every command starts from the base */
  pullAnswers?: PullAnswers;
}

/** What a command became: its Session, the repository named when the install has several, the PR it continues. */
export interface Made {
  session: Session;
  repo?: string;
  pullRequest?: PullRequestRef;
}

type Command = { kind: 'start' | 'queue'; prompt: string } & CommandOptions;

export class NewSessions {
  private readonly d: NewSessionDeps;

  constructor(deps: NewSessionDeps) {
    this.d = deps;
  }

  /** The command's Session and, when the install has several, its repository's name; or why its pictures failed. */
  async create(
    message: InboundMessage,
    command: Command,
  ): Promise<Made | { failure: ImageFailure | 'refused' } | { notYours: string }> {
    const repo = await this.d.repos.pick(message.from, command);
    if (!this.d.repos.people.mayUse(message.from, repo.name)) return { notYours: repo.name };
    const images = message.media?.length ? await this.keepImages(message) : undefined;
    if (images && 'failure' in images) return images;
    const pullRequest =
      command.pullRequest ?? (command.fresh ? undefined : await this.d.pullAnswers?.followed(message.from, repo.name));
    const session = await this.write(message, repo, { ...command, ...(pullRequest ? { pullRequest } : {}) }, images);
    return {
      session,
      repo: this.d.repos.names.length > 1 ? session.metadata.labels?.[LABEL_REPO] : undefined,
      pullRequest: session.spec.pullRequest,
    };
  }

  /** The pictures of a new command; none fetched when its Session exists already (a copy: write() answers it). */
  private async keepImages(
    message: InboundMessage,
  ): Promise<SessionImage[] | { failure: ImageFailure | 'refused' } | undefined> {
    if (!this.d.images) return { failure: 'refused' };
    const name = commandSessionName(this.d.phoneHash(message.from), message.id);
    if (await this.d.sessions.get(this.d.namespace, name)) return undefined;
    return this.d.images.keep(message, name);
  }

  private async write(
    message: InboundMessage,
    repo: NamedRepo,
    command: Command,
    images?: SessionImage[],
  ): Promise<Session> {
    const phone = message.from;
    const name = commandSessionName(this.d.phoneHash(phone), message.id);
    const requester = this.d.repos.people.requester(phone);
    const spec: SessionSpec = {
      ...this.d.repos.spec(phone, repo, command.prompt, command, this.d.defaults, this.d.phones),
      ...(command.pullRequest ? { pullRequest: command.pullRequest } : {}),
      ...(command.fix ? { fix: command.fix } : {}),
      ...(requester ? { requester } : {}),
      channel: message.transport === 'web' ? 'web' : 'whatsapp',
      ...(images?.length ? { images } : {}),
      ...(this.d.cost?.runPauseUsd ? { costPauseUsd: this.d.cost.runPauseUsd } : {}),
    };
    const queued = command.kind === 'queue';
    const annotations: Record<string, string> = {
      [ANNOTATION_DELIVERED]: writeDelivered({ n: 1, seq: 0, started: !queued, queued }),
      [ANNOTATION_RECEIVED_AT]: message.receivedAt ?? new Date(this.d.now()).toISOString(),
      ...this.d.once.ownMark,
    };
    try {
      const session = await this.d.sessions.create(this.d.namespace, name, spec, {
        labels: { [LABEL_PHONE_HASH]: this.d.phoneHash(phone), [LABEL_PART_OF]: 'tether', [LABEL_REPO]: repo.name },
        annotations,
      });
      this.d.phones.remember(session);
      return session;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      return this.d.once.createdBefore(await this.d.sessions.get(this.d.namespace, name));
    }
  }
}
