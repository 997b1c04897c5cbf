// How pull requests and their notices are named: a record's key in the ConfigMap, a notice's id
// (what its buttons carry, `<reply>:<notice id>`), and the words a notice answers to. Pure.
import { createHash } from 'node:crypto';
import type { PullAction, PullRecord } from './types.ts';

export const pullKey = (owner: string, repo: string, number: number) => `${owner}.${repo}.${number}`;

/** The 8 hex digits a notice id carries for its record: `pr-<hash>-<seq>`. */
export const pullKeyHash = (owner: string, repo: string, number: number) =>
  createHash('sha256')
    .update(pullKey(owner, repo, number))
    .digest('hex')
    .slice(0, 8);

/** A notice id of a record: valid as a button's request id (relay/chat/buttons.ts). */
export const noticeId = (record: Pick<PullRecord, 'owner' | 'repo' | 'number'>, seq: number) =>
  `pr-${pullKeyHash(record.owner, record.repo, record.number)}-${seq}`;

export const NOTICE_ID = /^pr-([0-9a-f]{8})-\d{1,9}$/;

/** The words, typed or tapped, that answer a pull request's notice. */
export const PULL_ACTIONS: readonly PullAction[] = ['fix', 'ignore', 'details', 'merge'];

export const isPullAction = (word: string): word is PullAction => (PULL_ACTIONS as readonly string[]).includes(word);
