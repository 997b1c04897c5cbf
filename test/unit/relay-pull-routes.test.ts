// The pull request words, typed and tapped: `new`, `prs`, `pr <n>`, *fix* / *ignore* / *details* /
// *merge*, and a pending request's words coming first.
import { describe, expect, it } from 'vitest';
import type { Pending } from '../../common/session/schema.ts';
import { encodePayload } from '../../relay/chat/buttons.ts';
import { route as routeWith, type PhoneContext } from '../../relay/inbound/router.ts';
import { routeTap } from '../../relay/inbound/tap.ts';
import { noticeId } from '../../relay/pulls/keys.ts';

const MAX_QUEUED = 2;
const route = (body: string, context: PhoneContext) => routeWith(body, context, MAX_QUEUED);
const at = '2026-11-27T08:00:00Z';
const question: Pending = {
  id: 'q1',
  kind: 'question',
  createdAt: at,
  questions: [{ question: 'Which one?', options: [{ label: 'A' }, { label: 'B' }] }],
};
const tool: Pending = { id: 't1', kind: 'tool', tool: 'Bash', input: '{}', createdAt: at };
const idle: PhoneContext = { queued: 0 };
const working: PhoneContext = { current: { name: 's1', phase: 'Working' }, queued: 0 };
const full: PhoneContext = { current: { name: 's1', phase: 'Working' }, queued: MAX_QUEUED };
const asking = (pending: Pending): PhoneContext => ({
  current: { name: 's1', phase: 'AwaitingApproval', pending },
  queued: 0,
});
const notice = noticeId({ owner: 'acme', repo: 'web', number: 41 }, 3);

describe('new <command>', () => {
  it('starts from the base, with or without a colon, before plan and @name', () => {
    expect(route('new add a footer', idle)).toEqual({ kind: 'start', prompt: 'add a footer', fresh: true });
    expect(route('New: add a footer', working)).toEqual({
      kind: 'queue',
      prompt: 'add a footer',
      position: 2,
      fresh: true,
    });
    expect(route('new plan: @web add a footer', { ...idle, repos: ['web'] })).toEqual({
      kind: 'start',
      prompt: 'add a footer',
      mode: 'plan',
      repo: 'web',
      fresh: true,
    });
  });

  it('is a plain command when "new" is part of a word or later in the text', () => {
    expect(route('newline at the end of files', idle)).toEqual({
      kind: 'start',
      prompt: 'newline at the end of files',
    });
    expect(route('add a new footer', idle)).toEqual({ kind: 'start', prompt: 'add a new footer' });
  });

  it('alone says how to use it; on a plan under review it is what to change', () => {
    expect(route('new', idle)).toEqual({ kind: 'newUsage' });
    const plan: Pending = { id: 'p1', kind: 'plan', summary: '1. x', createdAt: at };
    expect(route('new add a footer', asking(plan))).toMatchObject({ kind: 'decide', decision: { action: 'revise' } });
  });
});

describe('prs and pr <n>', () => {
  it('prs lists in any phase; pr <n> picks one when nothing is asked', () => {
    expect(route('prs', asking(question))).toEqual({ kind: 'prs' });
    expect(route('PRs', working)).toEqual({ kind: 'prs' });
    expect(route('pr 41', idle)).toEqual({ kind: 'pr', number: 41 });
    expect(route('pr #7', working)).toEqual({ kind: 'pr', number: 7 });
  });

  it('pr <n> answers an open question instead, and "pr" with more words is a command', () => {
    expect(route('pr 2', asking(question))).toMatchObject({ kind: 'decide', decision: { requestId: 'q1' } });
    expect(route('pr 41 needs a rebase', idle)).toEqual({ kind: 'start', prompt: 'pr 41 needs a rebase' });
  });
});

describe('fix, ignore, details, merge typed', () => {
  it.each(['fix', 'ignore', 'details', 'merge'] as const)('%s goes to the pull request actions', (word) => {
    expect(route(word, idle)).toEqual({ kind: 'pull', action: word });
    expect(route(`*${word.toUpperCase()}*`, working)).toEqual({ kind: 'pull', action: word });
  });

  it('a pending request takes them first: an answer to a question, instructions on a tool request', () => {
    expect(route('fix', asking(question))).toMatchObject({
      kind: 'decide',
      decision: { requestId: 'q1', message: 'fix' },
    });
    expect(route('merge', asking(tool))).toEqual({ kind: 'instructions', pending: tool });
  });

  it('with more words they are a command', () => {
    expect(route('fix the login test', idle)).toEqual({ kind: 'start', prompt: 'fix the login test' });
  });
});

describe('fix, ignore, details, merge tapped', () => {
  it('names the notice', () => {
    expect(routeTap(encodePayload('fix', notice), idle, MAX_QUEUED)).toEqual({
      kind: 'pull',
      action: 'fix',
      noticeId: notice,
    });
    expect(routeTap(encodePayload('details', notice), full, MAX_QUEUED)).toEqual({
      kind: 'pull',
      action: 'details',
      noticeId: notice,
    });
  });

  it('waits behind a pending request: the phone is shown what is asked', () => {
    expect(routeTap(encodePayload('fix', notice), asking(question), MAX_QUEUED)).toEqual({
      kind: 'instructions',
      pending: question,
    });
  });

  it('refuses words a notice never carries and ids that are not a notice', () => {
    expect(routeTap(encodePayload('approve', notice), idle, MAX_QUEUED)).toEqual({ kind: 'badTap' });
    expect(routeTap(encodePayload('fix', 'pr-XYZ-1'), idle, MAX_QUEUED)).toEqual({ kind: 'stale' });
    expect(routeTap(encodePayload('fix', 't1'), asking(tool), MAX_QUEUED)).toEqual({ kind: 'stale' });
  });
});
