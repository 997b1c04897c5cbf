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

/** An event key as a record keeps it: the first 16 hex digits of its SHA-256 (GitHub's text is hostile). */
export const eventKeyDigest = (key: string) =>
  /^[0-9a-f]{16}$/.test(key) ? key : createHash('sha256').update(key).digest('hex').slice(0, 16);

/** Whether `key` is among stored keys: digested, or plain as records kept them before digests. */
export const hasKey = (stored: readonly string[], key: string) =>
  stored.includes(eventKeyDigest(key)) || stored.includes(key);

/** Whether the record already acted on the event `key` names. */
export const hasSeen = (record: Pick<PullRecord, 'seen'>, key: string) => hasKey(record.seen, key);
