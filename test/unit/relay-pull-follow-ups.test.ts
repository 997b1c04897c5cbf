// The phone's pull requests through the inbound handler (in-memory Sessions and records): a follow-up
// continues the open pull request, `new` starts from the base, prs / pr <n> / status, the notice
// words handed to PullActions (a fix becomes a command), the people map's rights, the result words.
import { pino } from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import type { PullRequestRef } from '../../common/session/forge-schema.ts';
import type { Session } from '../../common/session/schema.ts';
import type { InboundOptions } from '../../relay/inbound/handler.ts';
import { People } from '../../relay/inbound/people.ts';
import { PhoneRepos } from '../../relay/inbound/phone-repos.ts';
import { MemoryRepoChoices } from '../../relay/inbound/repo-choices.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { PullRecorder } from '../../relay/pulls/recorder.ts';
import { MemoryPullRecords } from '../../relay/pulls/records.ts';
import type { PullAction, PullActionOutcome } from '../../relay/pulls/types.ts';
import { text } from '../../relay/text.ts';
import { WebChat } from '../../relay/transports/web.ts';
import { chatHandler } from '../support/chat-handler.ts';
import { MemorySessions } from '../support/memory-sessions.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+15555550100';
const REPOS = [
  { name: 'web', url: 'https://github.com/acme/web.git', baseBranch: 'main' },
  { name: 'docs', url: 'https://github.com/acme/docs.git', baseBranch: 'main' },
];
const PR: PullRequestRef = { number: 41, branch: 'tether/s-41', url: 'https://github.com/acme/web/pull/41' };
const SHA = 'a'.repeat(40);
const logger = pino({ level: 'silent' });

let store: MemorySessions;
let chat: WebChat;
let records: MemoryPullRecords;
let acted: Array<{ action: PullAction; noticeId?: string }>;
let outcome: PullActionOutcome;

function handler(people?: People, extra: Partial<InboundOptions> = {}) {
  const recorder = new PullRecorder({ store, records, repos: REPOS, logger });
  const actions = {
    act: async (_phone: string, action: PullAction, noticeId: string | undefined) => {
      acted.push({ action, ...(noticeId ? { noticeId } : {}) });
      return outcome;
    },
  };
  return chatHandler(
    { store, chat, metrics: createMetrics(), logger },
    {
      repos: new PhoneRepos(REPOS, new MemoryRepoChoices(), testPhoneHash, people),
      pulls: { records, catchUp: (sessions) => recorder.catchUp(sessions), actions },
      ...extra,
    },
  );
}
let n = 0;
const say = (h: ReturnType<typeof handler>, body: string, payload?: string) =>
  h.accept({ id: `web-${++n}`, from: phone, body, transport: 'web', ...(payload ? { payload } : {}) });
const lastReply = () =>
  chat
    .entries()
    .filter((e) => e.from === 'bot')
    .at(-1)!.text ?? '';
const newest = () =>
  store
    .list()
    .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!))
    .at(-1)!;
const byPrompt = (prompt: string) => store.list().find((s) => s.spec.prompt === prompt)!;

/** The run of `prompt` ended: it opened or added to pull request #41 (or changed nothing). */
async function succeeded(prompt: string, result: Record<string, unknown> = {}) {
  const s = byPrompt(prompt);
  await store.patchStatus('ns', s.metadata.name!, {
    phase: 'Succeeded',
    completionTime: new Date(Date.now() - 60_000 + n).toISOString(),
    result: { agentSessionId: `agent-${prompt.length}`, ...result },
  } as NonNullable<Session['status']>);
}
const opened = { prUrl: PR.url, prNumber: 41, branch: PR.branch, commit: SHA, pushed: 'opened' };

beforeEach(() => {
  store = new MemorySessions('ns');
  chat = new WebChat({ phone, token: 't'.repeat(20) });
  records = new MemoryPullRecords();
  acted = [];
  outcome = { kind: 'reply', text: 'told' };
});

describe('a follow-up', () => {
  it('continues the open pull request of its repository, in its conversation; new starts from the base', async () => {
    const h = handler();
    await say(h, 'fix the navbar');
    expect(newest().spec.pullRequest).toBeUndefined();
    await succeeded('fix the navbar', opened);
    await say(h, 'also make it blue');
    const followUp = byPrompt('also make it blue');
    expect(followUp.spec.pullRequest).toEqual(PR);
    expect(followUp.spec.resumeAgentSession).toBe('agent-14');
    expect(lastReply()).toBe(
      `On it (session ${followUp.metadata.name!.slice(-4)}) in *web* — continuing PR #41. Reply *cancel* to stop.`,
    );
    await succeeded('also make it blue', { ...opened, pushed: 'added' });
    await say(h, 'new add a footer');
    expect(byPrompt('add a footer').spec.pullRequest).toBeUndefined();
    expect(lastReply()).toContain('— a new pull request from main.');
    await succeeded('add a footer');
    await say(h, '@docs fix a typo');
    expect(byPrompt('fix a typo').spec.pullRequest).toBeUndefined();
  });

  it("records no pull request of another repository than the Session's", async () => {
    const h = handler();
    await say(h, 'fix the navbar');
    await succeeded('fix the navbar', { ...opened, prUrl: 'https://github.com/acme/secrets/pull/41' });
    await say(h, 'also make it blue');
    expect(byPrompt('also make it blue').spec.pullRequest).toBeUndefined();
    expect(await records.ofPhone(phone)).toEqual([]);
  });

  it('starts from the base once the pull request is merged', async () => {
    const h = handler();
    await say(h, 'fix the navbar');
    await succeeded('fix the navbar', opened);
    await say(h, 'status');
    expect(lastReply()).toContain(`PR #41 is open: ${PR.url}`);
    await records.update('acme', 'web', 41, (r) => r && { ...r, state: 'merged' });
    await say(h, 'and the footer');
    expect(byPrompt('and the footer').spec.pullRequest).toBeUndefined();
    await say(h, 'status');
    expect(lastReply()).not.toContain('PR #41');
  });

  it('prs lists the open ones with their commands; pr <n> makes one current', async () => {
    const h = handler();
    await say(h, 'fix the navbar');
    await succeeded('fix the navbar', opened);
    await say(h, 'new add a footer');
    const footer = { prUrl: 'https://github.com/acme/web/pull/42', prNumber: 42, branch: 'tether/s-42', commit: SHA };
    await succeeded('add a footer', { ...footer, pushed: 'opened' });
    await say(h, 'prs');
    expect(lastReply()!.split('\n').slice(1, 3)).toEqual([
      '• #42 (web) add a footer — open · current',
      '• #41 (web) fix the navbar — open',
    ]);
    await say(h, 'pr 41');
    expect(lastReply()).toBe(`Your next commands on *web* continue PR #41: ${PR.url}`);
    await say(h, 'and make it blue');
    expect(byPrompt('and make it blue').spec.pullRequest?.number).toBe(41);
    await say(h, 'pr 7');
    expect(lastReply()).toBe(text.pullUnknown(7));
  });
});

describe('the notice words', () => {
  const fixOutcome: PullActionOutcome = {
    kind: 'command',
    prompt: 'Fix the failing checks on pull request #41',
    repo: 'web',
    pullRequest: PR,
    fix: { kind: 'checks', headSha: SHA, checkRuns: [7] },
  };

  it('a fix starts the command the actions give, on the pull request, or queues it behind a run', async () => {
    outcome = fixOutcome;
    const h = handler();
    await say(h, 'fix', 'fix:pr-0123abcd-2');
    expect(acted).toEqual([{ action: 'fix', noticeId: 'pr-0123abcd-2' }]);
    const fix = newest();
    expect(fix.spec).toMatchObject({ prompt: fixOutcome.prompt, pullRequest: PR, fix: fixOutcome.fix });
    expect(lastReply()).toContain('— continuing PR #41.');
    await say(h, 'fix');
    expect(acted.at(-1)).toEqual({ action: 'fix' });
    expect(lastReply()).toBe(text.queued(2, 41));
  });

  it('a reply outcome is sent as it is; merge needs the person to be allowed', async () => {
    const h = handler(new People([{ phone, name: 'Ada', github: 'ada' }]));
    await say(h, 'details');
    expect(lastReply()).toBe('told');
    await say(h, 'merge');
    expect(lastReply()).toBe(text.mergeNotYours());
    expect(acted).toEqual([{ action: 'details' }]);
    await say(handler(new People([{ phone, name: 'Ada', merge: true }])), 'merge');
    expect(acted.at(-1)).toEqual({ action: 'merge' });
  });

  it('without actions wired, the words say so', async () => {
    const h = handler(undefined, { pulls: { records, catchUp: async () => {} } });
    await say(h, 'fix');
    expect(lastReply()).toBe(text.pullActionsOff());
  });
});

describe('the people map', () => {
  it("sets the requester and channel, and keeps a phone to its person's repositories", async () => {
    const h = handler(new People([{ phone, name: 'Ada L', email: 'ada@example.com', repos: ['docs'] }]));
    await say(h, 'fix a typo');
    expect(newest().spec).toMatchObject({
      repo: { url: REPOS[1]!.url },
      requester: { name: 'Ada L', email: 'ada@example.com' },
      channel: 'web',
    });
    const count = store.list().length;
    await say(h, '@web fix the navbar');
    expect(store.list()).toHaveLength(count);
    expect(lastReply()).toBe(text.repoNotYours('web', ['docs']));
    await say(h, 'repo web');
    expect(lastReply()).toBe(text.repoNotYours('web', ['docs']));
  });
});

describe('the result of a follow-up', () => {
  it("says it was pushed to the pull request, with the pull request's size and someone else's push", () => {
    const session = {
      metadata: { name: 's1' },
      spec: { prompt: 'x' },
      status: { phase: 'Succeeded', result: { ...opened, pushed: 'onNewTip', prStat: '3 files changed, +58 −12' } },
    } as unknown as Session;
    expect(text.finished(session, SESSION_DEFAULTS).split('\n')).toEqual([
      `✅ Pushed to pull request #41: ${PR.url}`,
      'The pull request now: 3 files changed, +58 −12',
      'Someone else had pushed to it meanwhile: your changes went on top of theirs.',
    ]);
  });
});
