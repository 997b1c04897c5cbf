// What the phone reads for each outcome: plain words, a next step, no stack traces or secrets.
import { describe, expect, it } from 'vitest';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import type { Session, SessionStatus } from '../../common/session/schema.ts';
import { owed } from '../../relay/outbound/owed.ts';
import { text } from '../../relay/text.ts';
import { MESSAGE_LIMIT } from '../../relay/outbound/split.ts';

const session = (status: SessionStatus): Session => ({
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  metadata: { name: '0123456789abcdef-20261122080000-7f3a', creationTimestamp: '2026-11-22T08:00:00Z' },
  spec: { phone: '+14155550123', prompt: 'fix it', repo: { url: 'x' }, workspace: 'ws-x', timeouts: { run: '60m' } },
  status,
});
/** Not the shipped defaults: the words must follow the relay's configuration. */
const defaults: SessionDefaults = { maxQueued: 3, timeouts: { run: '2h', approval: '45m' } };
const finished = (reason: string) => [
  { type: 'Finished', status: 'True' as const, reason, message: 'x', lastTransitionTime: '2026-11-22T08:00:00Z' },
];
const condition = (reason: string) => [
  { type: 'Ready', status: 'False' as const, reason, message: 'x', lastTransitionTime: '2026-11-22T08:00:00Z' },
];

describe('result messages', () => {
  it.each<[string, SessionStatus, string]>([
    [
      'a pull request',
      {
        phase: 'Succeeded',
        startTime: '2026-11-22T08:00:00Z',
        completionTime: '2026-11-22T08:03:12Z',
        result: { prUrl: 'https://x/pull/1', costUsd: 0.413, tokens: { input: 20_000, output: 8_000 } },
      },
      '✅ Pull request opened: https://x/pull/1\nTook 3 min 12 s · $0.41 · 28k tokens',
    ],
    [
      'no changes',
      { phase: 'Succeeded', result: { summary: 'Nothing to change: the test already passes.' } },
      '✅ Done (session 7f3a).\nNothing to change: the test already passes.',
    ],
    ['a rejection', { phase: 'Rejected' }, '↩️ Changes undone. Send a new command when you are ready.'],
    [
      'an approval timeout',
      { phase: 'TimedOut' },
      '⌛ Approval expired. Your changes are kept on the workspace; send a new command to continue from them.',
    ],
    [
      'an agent failure with a stack trace',
      {
        phase: 'Failed',
        conditions: condition('AgentFailed'),
        result: { message: 'npm test failed (3 failing)\n    at run (/app/runner.ts:10:5)' },
      },
      '❌ The agent stopped with an error: npm test failed (3 failing).\nPartial changes are kept. Reply *status* ' +
        'for details or send a new command.',
    ],
    [
      'a failure whose message ends its own sentence',
      {
        phase: 'Failed',
        conditions: condition('AgentFailed'),
        result: { message: 'Someone else pushed meanwhile. Nothing was pushed.' },
      },
      '❌ The agent stopped with an error: Someone else pushed meanwhile. Nothing was pushed.\nPartial changes are ' +
        'kept. Reply *status* for details or send a new command.',
    ],
    [
      'approved changes that could not be published (the branch moved under them)',
      {
        phase: 'Failed',
        conditions: condition('AgentFailed'),
        result: {
          branch: 'tether/s1',
          message: 'Someone else pushed to tether/s1 meanwhile and changed the same parts of a.js; nothing was pushed',
        },
      },
      '❌ The changes were not published: Someone else pushed to tether/s1 meanwhile and changed the same parts of ' +
        'a.js; nothing was pushed.\nThey are kept on the workspace. Reply *status* for details or send a new command.',
    ],
    [
      "the runner's Failed seen before the controller's Finished condition: still not published, not an agent error",
      {
        phase: 'Failed',
        result: {
          branch: 'tether/s1',
          message: 'Someone else pushed to tether/s1 meanwhile and changed the same parts of a.js; nothing was pushed',
        },
      },
      '❌ The changes were not published: Someone else pushed to tether/s1 meanwhile and changed the same parts of ' +
        'a.js; nothing was pushed.\nThey are kept on the workspace. Reply *status* for details or send a new command.',
    ],
    [
      'a run timeout',
      { phase: 'Failed', conditions: condition('RunTimeout') },
      '❌ The task ran past its time limit (60m) and was stopped. Partial changes are kept. Send a new command to ' +
        'continue.',
    ],
    [
      'a lost pod',
      { phase: 'Failed', conditions: condition('PodLost'), result: { message: 'exit code 137' } },
      '❌ The agent stopped unexpectedly (its container went away). Partial changes are kept. Send the command again ' +
        'to retry.',
    ],
    [
      'a start that never came',
      {
        phase: 'Failed',
        conditions: condition('StartTimeout'),
        result: {
          message:
            'the runner image "x:1" could not be pulled (ImagePullBackOff). Ask your operator to check the runner ' +
            'image of the Tether install, then send the command again.',
        },
      },
      '❌ The agent could not start: the runner image "x:1" could not be pulled (ImagePullBackOff). Ask your ' +
        'operator to check the runner image of the Tether install, then send the command again.',
    ],
    [
      'a full queue',
      { phase: 'Failed', conditions: condition('QueueFull') },
      'You already have 3 commands waiting. Wait for one to finish, or reply *cancel* to clear them.',
    ],
  ])('for %s', (_label, status, expected) => {
    expect(text.finished(session(status), defaults)).toBe(expected);
  });

  it('for a cancel, and for a stop at the cost pause (a Cancelled the user did not ask for with cancel)', () => {
    const cancelled = session({ phase: 'Cancelled' });
    cancelled.spec.cancel = true;
    expect(text.finished(cancelled, defaults)).toBe('🛑 Session 7f3a cancelled.');
    const stopped = session({ phase: 'Cancelled', result: { costUsd: 2.31 } });
    stopped.spec.decisions = [{ requestId: 'cost-1a2b3c4d', action: 'reject', at: '2026-11-22T08:01:00Z' }];
    expect(text.finished(stopped, defaults)).toBe(
      text.finished(
        session({ phase: 'Cancelled', conditions: finished('CostStopped'), result: { costUsd: 2.31 } }),
        defaults,
      ),
    );
    expect(text.finished(stopped, defaults)).toBe(
      '🛑 Session 7f3a stopped at its cost pause ($2.31). The changes so far stay on the workspace; your queued ' +
        "commands still start, within today's budget.",
    );
  });

  it('names the configured run timeout when the Session has none of its own', () => {
    const timedOut = session({ phase: 'Failed', conditions: condition('RunTimeout') });
    delete timedOut.spec.timeouts;
    expect(text.finished(timedOut, defaults)).toMatch(/^❌ The task ran past its time limit \(2h\) and was stopped\./);
  });
});

describe('requests', () => {
  const createdAt = '2026-11-22T08:00:00Z';
  it('numbers the options of a question', () => {
    expect(
      text.pending(
        {
          id: 'q',
          kind: 'question',
          createdAt,
          questions: [
            {
              question: 'Which database should the cache use?',
              options: [
                { label: 'Redis', description: 'already in docker-compose' },
                { label: 'In-memory', description: 'simplest, lost on restart' },
              ],
            },
          ],
        },
        '30m',
      ),
    ).toBe(
      '❓ Which database should the cache use?\n1. Redis — already in docker-compose\n2. In-memory — simplest, lost ' +
        'on restart\nReply with a number or your own answer.',
    );
  });

  it('shows a tool call without JSON noise, even when the input was truncated', () => {
    expect(
      text.pending({ id: 't', kind: 'tool', tool: 'WebFetch', input: '{"url":"https://exa', createdAt }, '30m'),
    ).toBe(
      '🔐 The agent wants to run: `WebFetch: {"url":"https://exa`\nReply *allow*, *allow always* (for this session) ' +
        'or *deny <reason>*.',
    );
  });

  it("a follow-up's review says the pull request it pushes to and that pull request's whole size", () => {
    const changes = { id: 'c', kind: 'changes' as const, createdAt, summary: ' 1 file changed, 1 insertion(+)' };
    expect(text.pending(changes, '30m')).toMatch(/^Reply \*approve\* to open a pull request or \*reject\*/);
    expect(text.pending(changes, '30m', 7)).toMatch(/^Reply \*approve\* to push to pull request #7 or \*reject\*/);
    const stat = ' src/a.js | 1 +\n 1 file changed, 1 insertion(+)';
    expect(text.changesCaption(changes, stat)).not.toMatch(/#7/);
    expect(text.changesCaption(changes, stat, undefined, { number: 7, stat: '3 files changed, 9 insertions(+)' })).toBe(
      'Ready for review — 1 file changed, +1:\n  src/a.js | 1 +\n' +
        'Pull request #7 with these changes: 3 files changed, 9 insertions(+)',
    );
  });

  it('gives the status line the phone expects: session, phase and time, last progress, queue', () => {
    const s = {
      ...session({
        phase: 'Working',
        startTime: '2026-11-22T08:00:00Z',
        progress: [{ seq: 1, at: createdAt, text: 'Running npm test' }],
      }),
    };
    expect(text.status(s, 1, Date.parse('2026-11-22T08:02:30Z'))).toBe(
      'Session 7f3a · Working for 2 min · last: Running npm test · queue: 1',
    );
  });
});

describe('a Session without its own timeouts', () => {
  it('expires, as the phone is told, after the configured approval timeout', () => {
    const waiting = session({
      phase: 'AwaitingApproval',
      pending: { id: 'p', kind: 'plan', summary: '1. do it', createdAt: new Date().toISOString() },
    });
    delete waiting.spec.timeouts;
    const { parts } = owed(
      waiting,
      { n: 1, seq: 0, started: true },
      { now: Date.now(), progressBatchMs: 0, reminderBeforeMs: 60_000, defaults },
    );
    expect(parts.map((p) => p.text)).toEqual([expect.stringMatching(/\(expires in 45 min\)$/)]);
  });
});

describe('help', () => {
  it(`says a request can be answered with a tap, fits one message, and lists the repositories only when there are \
several`, () => {
    expect(text.help()).toMatch(/When asked: tap a button under the request, or reply \*approve\*/);
    expect(text.help().length).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(text.help()).not.toMatch(/@name/);
    expect(text.help('Repositories: *sample* (your default), web')).toMatch(/@name <command>/);
  });
});
