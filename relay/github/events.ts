// A GitHub webhook payload, reduced to the PullEvents the phone may hear of (relay/pulls/types.ts).
// The payload is hostile data: every field is checked for its type and shape, and free text
// (check output, review bodies) is cut here, so what is journaled and kept stays small. Pure.
import { GITHUB_LOGIN_PATTERN, OBJECT_ID_PATTERN } from '../../common/session/forge-schema.ts';
import type { PullEvent } from '../pulls/types.ts';

/** The first lines of a failing check's output or a review's body that an event keeps. */
export const EXCERPT_LINES = 12;
export const EXCERPT_CHARS = 1200;
/** A check run's name as kept (GitHub allows longer). */
export const CHECK_NAME_CHARS = 100;
/** The most pull requests one check run or suite is told for. */
const PULLS_PER_EVENT = 10;
/** Check conclusions the phone hears of as a failure. */
export const FAILED = new Set(['failure', 'timed_out', 'cancelled', 'action_required']);

type Json = Record<string, unknown>;
type Where = { owner: string; repo: string };

const object = (value: unknown): Json | undefined =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
const string = (value: unknown, max = 200): string | undefined =>
  typeof value === 'string' && value.length <= max ? value : undefined;
const id = (value: unknown): number | undefined =>
  Number.isSafeInteger(value) && (value as number) >= 1 ? (value as number) : undefined;
const sha = (value: unknown): string | undefined => {
  const text = string(value, 64);
  return text && new RegExp(OBJECT_ID_PATTERN).test(text) ? text : undefined;
};
const NAME = /^[A-Za-z0-9._-]{1,100}$/;
/** A GitHub login, or '' when the payload's is missing or not shaped like one. */
export const loginOf = (user: unknown): string => {
  const login = string(object(user)?.login, 39);
  return login && new RegExp(GITHUB_LOGIN_PATTERN).test(login) ? login : '';
};

/** The first EXCERPT_LINES non-blank lines, at most EXCERPT_CHARS. */
export function excerptOf(...texts: unknown[]): string {
  const lines = texts
    .flatMap((t) => (typeof t === 'string' ? t.slice(0, EXCERPT_CHARS * 4).split(/\r?\n/) : []))
    .map((l) => l.trimEnd())
    .filter((l) => l.trim())
    .slice(0, EXCERPT_LINES);
  return lines.join('\n').slice(0, EXCERPT_CHARS);
}

/** The repository the payload is about, when its owner and name are well formed. */
function whereOf(payload: Json): Where | undefined {
  const repository = object(payload.repository);
  const owner = loginOf(object(repository)?.owner);
  const repo = string(repository?.name, 100);
  return owner && repo && NAME.test(repo) ? { owner, repo } : undefined;
}

/**
 * Whether a pull request a check names is the payload repository's own: GitHub lists there pull requests of
 * other repositories too (one in the parent opened from a branch of this fork), whose numbers are theirs.
 */
function inRepository(pull: Json | undefined, payload: Json, where: Where): boolean {
  const base = object(object(pull?.base)?.repo);
  if (!base) return true;
  const own = id(object(payload.repository)?.id);
  if (own !== undefined && id(base.id) !== undefined) return id(base.id) === own;
  const url = string(base.url, 300);
  return url === undefined || url.toLowerCase().endsWith(`/repos/${where.owner}/${where.repo}`.toLowerCase());
}

/** The numbers of the pull requests a check run or suite names (same-repository ones only). */
function pullNumbers(list: unknown, payload: Json, where: Where): number[] {
  if (!Array.isArray(list)) return [];
  const numbers = list
    .map(object)
    .filter((p) => inRepository(p, payload, where))
    .map((p) => id(p?.number))
    .filter((n): n is number => n !== undefined);
  return [...new Set(numbers)].slice(0, PULLS_PER_EVENT);
}

function checkRun(payload: Json, where: Where): PullEvent[] {
  const run = object(payload.check_run);
  const runId = id(run?.id);
  const headSha = sha(run?.head_sha);
  const conclusion = string(run?.conclusion);
  if (payload.action !== 'completed' || !run || !runId || !headSha || !conclusion || !FAILED.has(conclusion)) return [];
  const output = object(run.output);
  const name = typeof run.name === 'string' ? run.name.slice(0, CHECK_NAME_CHARS) : `check ${runId}`;
  const check = { id: runId, name, excerpt: excerptOf(output?.title, output?.summary, output?.text) };
  return pullNumbers(run.pull_requests, payload, where).map((number) => ({
    ...where,
    number,
    key: `check_run:${runId}:${headSha}`,
    kind: 'checksFailed' as const,
    headSha,
    checks: [check],
  }));
}

function checkSuite(payload: Json, where: Where): PullEvent[] {
  const suite = object(payload.check_suite);
  const suiteId = id(suite?.id);
  const headSha = sha(suite?.head_sha);
  if (payload.action !== 'completed' || suite?.conclusion !== 'success' || !suiteId || !headSha) return [];
  return pullNumbers(suite.pull_requests, payload, where).map((number) => ({
    ...where,
    number,
    key: `check_suite:${suiteId}:${headSha}`,
    kind: 'checksPassed' as const,
    headSha,
  }));
}

function review(payload: Json, where: Where): PullEvent[] {
  const body = object(payload.review);
  const reviewId = id(body?.id);
  const number = id(object(payload.pull_request)?.number);
  const headSha = sha(body?.commit_id);
  const state = string(body?.state)?.toLowerCase();
  const gist = excerptOf(body?.body);
  if (payload.action !== 'submitted' || !body || !reviewId || !number || !headSha) return [];
  const kind = state === 'changes_requested' ? 'changesRequested' : state === 'commented' ? 'reviewComments' : '';
  if (!kind) return [];
  // The webhook does not count a review's line comments: 0 here, counted by the notifier (notify.ts).
  const event = { ...where, number, key: `review:${reviewId}`, kind, headSha, reviewId } as const;
  return [{ ...event, reviewer: loginOf(body.user), gist, comments: 0 }];
}

function pullRequest(payload: Json, where: Where): PullEvent[] {
  const pull = object(payload.pull_request);
  const number = id(pull?.number);
  if (!pull || !number) return [];
  if (payload.action === 'synchronize') {
    const headSha = sha(object(pull.head)?.sha);
    return headSha ? [{ ...where, number, key: `head:${headSha}`, kind: 'headMoved', headSha }] : [];
  }
  if (payload.action !== 'closed') return [];
  const closedAt = string(pull.closed_at, 40) ?? '';
  const key = `closed:${/^[0-9T:.Z+-]*$/.test(closedAt) ? closedAt : ''}`;
  return pull.merged === true
    ? [{ ...where, number, key, kind: 'merged', by: loginOf(pull.merged_by) || undefined }]
    : [{ ...where, number, key, kind: 'closed', by: loginOf(payload.sender) || undefined }];
}

const READERS: Record<string, (payload: Json, where: Where) => PullEvent[]> = {
  check_run: checkRun,
  check_suite: checkSuite,
  pull_request_review: review,
  pull_request: pullRequest,
};

/** The events a delivery of `eventName` carries; [] for anything the phone does not hear of. */
export function eventsOf(eventName: string, payload: unknown): PullEvent[] {
  const read = Object.hasOwn(READERS, eventName) ? READERS[eventName] : undefined;
  const body = object(payload);
  const where = body && whereOf(body);
  return read && body && where ? read(body, where) : [];
}
