// Every keyword in every phase: what an incoming text means.
import { describe, expect, it } from 'vitest';
import { normalize, route as routeWith, type PhoneContext, type Route } from '../../relay/inbound/router.ts';
import type { Pending } from '../../common/session/schema.ts';

const MAX_QUEUED = 5;
const route = (body: string, context: PhoneContext) => routeWith(body, context, MAX_QUEUED);
const at = '2026-11-22T08:00:00Z';
const pendings = {
  tool: { id: 't1', kind: 'tool', tool: 'Bash', input: '{"command":"npm install x"}', createdAt: at },
  question: {
    id: 'q1',
    kind: 'question',
    createdAt: at,
    questions: [{ question: 'Which database?', options: [{ label: 'Redis' }, { label: 'In-memory' }] }],
  },
  changes: { id: 'c1', kind: 'changes', summary: '3 files changed', createdAt: at },
  plan: { id: 'p1', kind: 'plan', summary: '1. do it', createdAt: at },
} satisfies Record<string, Pending>;

const contexts: Record<string, PhoneContext> = {
  idle: { queued: 0 },
  new: { current: { name: 's1', phase: undefined }, queued: 0 },
  queuedOnly: { queued: 2 },
  starting: { current: { name: 's1', phase: 'Starting' }, queued: 0 },
  working: { current: { name: 's1', phase: 'Working' }, queued: 1 },
  workingFull: { current: { name: 's1', phase: 'Working' }, queued: MAX_QUEUED },
  publishing: { current: { name: 's1', phase: 'Publishing' }, queued: 0 },
  tool: { current: { name: 's1', phase: 'AwaitingApproval', pending: pendings.tool }, queued: 0 },
  question: { current: { name: 's1', phase: 'AwaitingApproval', pending: pendings.question }, queued: 0 },
  changes: { current: { name: 's1', phase: 'AwaitingApproval', pending: pendings.changes }, queued: 0 },
  plan: { current: { name: 's1', phase: 'AwaitingApproval', pending: pendings.plan }, queued: 0 },
};
type Ctx = keyof typeof contexts;

const LONG = 'x'.repeat(9000);
const garbage = ['\u0000\u0001\u0002', '🚀🔥', '<script>alert(1)</script>', 'DROP TABLE sessions;--', 'ñ'.repeat(50)];

/** Expected route kind (and decision) for [input] in each context; '-' = same as a new command. */
const decision = (action: string, extra: object = {}) => ({
  kind: 'decide',
  decision: expect.objectContaining({ action, ...extra }),
});
const command = (ctx: Ctx, prompt: string): object => {
  const c = contexts[ctx]!;
  if (!c.current && c.queued === 0) return { kind: 'start', prompt };
  if (c.queued >= MAX_QUEUED) return { kind: 'queueFull' };
  return { kind: 'queue', prompt, position: c.queued + (c.current ? 2 : 1) };
};
/** Anything typed on a plan that is no keyword asks for a revised plan. */
const awaiting = (kind: string) => ({ kind: 'instructions', pending: expect.objectContaining({ kind }) });

const nonPending: Ctx[] = ['idle', 'new', 'queuedOnly', 'starting', 'working', 'workingFull', 'publishing'];

const table: Array<[string, Record<string, unknown>]> = [
  ['help', { other: { kind: 'help' } }],
  ['?', { other: { kind: 'help' } }],
  ['HELP', { other: { kind: 'help' } }],
  ['status', { other: { kind: 'status' } }],
  ['s', { other: { kind: 'status' } }],
  ['  Status  ', { other: { kind: 'status' } }],
  ['cancel', { other: { kind: 'cancel' } }],
  ['c', { other: { kind: 'cancel' } }],
  ['*Cancel*', { other: { kind: 'cancel' } }],
  [
    'approve',
    {
      tool: decision('allow', { scope: 'once' }),
      changes: decision('approve'),
      plan: decision('approve'),
      question: awaiting('question'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'a',
    {
      tool: decision('allow', { scope: 'once' }),
      changes: decision('approve'),
      plan: decision('approve'),
      question: awaiting('question'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'Approve!',
    {
      tool: decision('allow'),
      changes: decision('approve'),
      plan: decision('approve'),
      question: awaiting('question'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'reject',
    {
      tool: decision('deny'),
      changes: decision('reject'),
      plan: decision('reject'),
      question: decision('reject'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'r',
    {
      tool: decision('deny'),
      changes: decision('reject'),
      plan: decision('reject'),
      question: decision('reject'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'reject too risky',
    {
      tool: decision('deny', { message: 'too risky' }),
      changes: decision('reject', { message: 'too risky' }),
      plan: decision('reject', { message: 'too risky' }),
      question: decision('reject', { message: 'too risky' }),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'allow',
    {
      tool: decision('allow', { scope: 'once' }),
      changes: awaiting('changes'),
      plan: awaiting('plan'),
      question: decision('answer'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'allow always',
    {
      tool: decision('allow', { scope: 'session' }),
      changes: awaiting('changes'),
      plan: awaiting('plan'),
      question: decision('answer'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'always',
    {
      tool: decision('allow', { scope: 'session' }),
      changes: awaiting('changes'),
      plan: awaiting('plan'),
      question: decision('answer'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'deny',
    {
      tool: decision('deny'),
      changes: awaiting('changes'),
      plan: awaiting('plan'),
      question: decision('answer'),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    'deny no network please',
    {
      tool: decision('deny', { message: 'no network please' }),
      changes: awaiting('changes'),
      plan: decision('revise', { message: 'deny no network please' }),
      question: decision('answer', { message: 'deny no network please' }),
      other: { kind: 'nothingPending' },
    },
  ],
  [
    '1',
    {
      question: decision('answer', { answers: { 'Which database?': 'Redis' } }),
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      other: 'command',
    },
  ],
  [
    '2',
    {
      question: decision('answer', { answers: { 'Which database?': 'In-memory' } }),
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      other: 'command',
    },
  ],
  [
    '3',
    {
      question: { kind: 'instructions', pending: pendings.question, hint: 'badNumber' },
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      other: 'command',
    },
  ],
  [
    '1 2',
    {
      question: { kind: 'instructions', pending: pendings.question, hint: 'badNumber' },
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      other: 'command',
    },
  ],
  [
    'use postgres instead',
    {
      question: decision('answer', { answers: { 'Which database?': 'use postgres instead' } }),
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      other: 'command',
    },
  ],
  [
    'make the navbar sticky',
    {
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      question: decision('answer'),
      other: 'command',
    },
  ],
  [
    "what's happening?",
    {
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      question: decision('answer'),
      other: 'command',
    },
  ],
  ...garbage.map((g): [string, Record<string, unknown>] => [
    g,
    {
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      question: decision('answer'),
      other: 'command',
    },
  ]),
  ['', { other: { kind: 'empty' } }],
  ['   \n\t ', { other: { kind: 'empty' } }],
  ['**', { other: { kind: 'empty' } }],
  [
    LONG,
    {
      tool: awaiting('tool'),
      changes: awaiting('changes'),
      plan: decision('revise'),
      question: decision('answer'),
      other: { kind: 'tooLong' },
    },
  ],
];

const cases = table.flatMap(([input, expected]) =>
  (Object.keys(contexts) as Ctx[]).map((ctx) => {
    const want = expected[ctx] ?? expected.other;
    return [
      JSON.stringify(input.slice(0, 30)),
      ctx,
      input,
      want === 'command' || want === undefined ? command(ctx, input.trim()) : want,
    ] as const;
  }),
);

describe('route', () => {
  it.each(cases)('%s while %s', (_label, ctx, input, want) => {
    expect(route(input, contexts[ctx]!)).toMatchObject(want as Route);
  });

  it('answers a question for every non-pending phase the same way as a new command', () => {
    for (const ctx of nonPending) expect(route('1', contexts[ctx]!).kind).toMatch(/start|queue/);
  });

  it('maps several numbers to several questions, and numbers to a multi-select', () => {
    const two: Pending = {
      ...pendings.question,
      questions: [
        pendings.question.questions[0]!,
        { question: 'Port?', options: [{ label: '80' }, { label: '8080' }] },
      ],
    };
    const ctx: PhoneContext = { current: { name: 's1', phase: 'AwaitingApproval', pending: two }, queued: 0 };
    expect(route('2, 1', ctx)).toMatchObject(
      decision('answer', { answers: { 'Which database?': 'In-memory', 'Port?': '80' } }),
    );
    expect(route('2', ctx)).toMatchObject({ kind: 'instructions', hint: 'badNumber' });
    const multi: Pending = {
      ...pendings.question,
      questions: [{ ...pendings.question.questions[0]!, multiSelect: true }],
    };
    expect(
      route('1 2', { current: { name: 's1', phase: 'AwaitingApproval', pending: multi }, queued: 0 }),
    ).toMatchObject(decision('answer', { answers: { 'Which database?': 'Redis, In-memory' } }));
  });

  it('refuses a command once the phone has the given number waiting', () => {
    const working = (queued: number): PhoneContext => ({ current: { name: 's1', phase: 'Working' }, queued });
    expect(routeWith('task', working(1), 2)).toEqual({ kind: 'queue', prompt: 'task', position: 3 });
    expect(routeWith('task', working(2), 2)).toEqual({ kind: 'queueFull' });
    expect(routeWith('task', working(7), 8)).toMatchObject({ kind: 'queue', position: 9 });
    expect(routeWith('task', working(0), 0)).toEqual({ kind: 'queueFull' });
  });

  it('decides on the pending request of the current session', () => {
    expect(route('approve', contexts.changes!)).toEqual({
      kind: 'decide',
      session: 's1',
      decision: { requestId: 'c1', action: 'approve' },
    });
  });

  it('normalizes WhatsApp emphasis, whitespace and trailing punctuation', () => {
    expect(normalize('  *approve*  ')).toBe('approve');
    expect(normalize('_reject_.')).toBe('reject');
    expect(normalize('line one\n\nline two!')).toBe('line one line two');
  });
});

describe('diff <file>', () => {
  it('asks for a file (or the list) with nothing open or changes under review', () => {
    for (const ctx of ['idle', 'working', 'changes'] as Ctx[]) {
      expect(route('diff src/App.tsx', contexts[ctx]!)).toEqual({ kind: 'diff', file: 'src/App.tsx' });
      expect(route('*Diff*', contexts[ctx]!)).toEqual({ kind: 'diff', file: '' });
    }
    expect(route('diff   README.md', contexts.changes!)).toEqual({ kind: 'diff', file: 'README.md' });
  });

  it('is an answer while a question is open, what to change on a plan, and no decision on a tool request', () => {
    expect(route('diff the two configs', contexts.question!)).toMatchObject({
      kind: 'decide',
      decision: { action: 'answer', message: 'diff the two configs' },
    });
    expect(route('diff the two approaches and keep the smaller', contexts.plan!)).toMatchObject({
      kind: 'decide',
      decision: { action: 'revise', message: 'diff the two approaches and keep the smaller' },
    });
    expect(route('diff', contexts.plan!)).toMatchObject({
      kind: 'decide',
      decision: { action: 'revise', message: 'diff' },
    });
    expect(route('diff src/App.tsx', contexts.tool!)).toMatchObject({
      kind: 'instructions',
      pending: { kind: 'tool' },
    });
    const cost: PhoneContext = {
      current: {
        name: 's1',
        phase: 'AwaitingApproval',
        pending: { id: 'k1', kind: 'cost', costUsd: 2, createdAt: at },
      },
      queued: 0,
    };
    expect(route('diff', cost)).toMatchObject({ kind: 'instructions', pending: { kind: 'cost' } });
  });

  it('needs the word on its own: "different colours" is a command', () => {
    expect(route('different colours', contexts.idle!)).toEqual({ kind: 'start', prompt: 'different colours' });
  });
});

describe('plan first and repositories', () => {
  const repos = ['sample', 'web', 'api'];
  const idle: PhoneContext = { queued: 0, repos };
  const working: PhoneContext = { ...contexts.working!, repos };

  it('a typed reply on a plan revises it with the text as it was sent (cut to the decision limit)', () => {
    expect(route('use  Postgres, not *MySQL*', contexts.plan!)).toEqual({
      kind: 'decide',
      session: 's1',
      decision: { requestId: 'p1', action: 'revise', message: 'use Postgres, not *MySQL*' },
    });
    const long = route(LONG, contexts.plan!) as Extract<Route, { kind: 'decide' }>;
    expect(long.decision.message).toHaveLength(4000);
    expect(route('deny', contexts.plan!)).toMatchObject({ kind: 'instructions' });
    expect(route('no use postgres', contexts.plan!)).toMatchObject({
      kind: 'decide',
      decision: { action: 'revise', message: 'no use postgres' },
    });
  });

  it.each([
    ['plan: add a toggle', { kind: 'start', prompt: 'add a toggle', mode: 'plan' }],
    ['Plan add a toggle', { kind: 'start', prompt: 'add a toggle', mode: 'plan' }],
    ['*plan:* add a toggle', { kind: 'start', prompt: '*plan:* add a toggle' }],
    ['plan:\nscript:\nsay: hi', { kind: 'start', prompt: 'script:\nsay: hi', mode: 'plan' }],
    ['planning the release', { kind: 'start', prompt: 'planning the release' }],
    ['plan', { kind: 'planUsage' }],
    ['plan:', { kind: 'planUsage' }],
    ['@web fix the navbar', { kind: 'start', prompt: 'fix the navbar', repo: 'web' }],
    ['@WEB fix it', { kind: 'start', prompt: 'fix it', repo: 'web' }],
    ['@web plan: fix it', { kind: 'start', prompt: 'fix it', repo: 'web', mode: 'plan' }],
    ['plan: @api fix it', { kind: 'start', prompt: 'fix it', repo: 'api', mode: 'plan' }],
    ['@web', { kind: 'repoUsage', name: 'web' }],
    ['@Web ', { kind: 'repoUsage', name: 'web' }],
    ['@../x fix it', { kind: 'unknownRepo', name: '../x' }],
    [`@${'a'.repeat(500)} fix`, { kind: 'unknownRepo', name: 'a'.repeat(500) }],
    ['@wéb fix', { kind: 'unknownRepo', name: 'wéb' }],
    ['@ fix it', { kind: 'unknownRepo', name: '' }],
    ['repo', { kind: 'repo' }],
    ['repos', { kind: 'repo' }],
    ['Repo Web', { kind: 'repo', name: 'web' }],
    ['repo my web', { kind: 'start', prompt: 'repo my web' }],
    ['repos are slow, fix the cache', { kind: 'start', prompt: 'repos are slow, fix the cache' }],
    ['repo cleanup: drop dead code', { kind: 'start', prompt: 'repo cleanup: drop dead code' }],
    ['repos web', { kind: 'start', prompt: 'repos web' }],
    ['repo nope', { kind: 'repo', name: 'nope' }],
    ['repository cleanup', { kind: 'start', prompt: 'repository cleanup' }],
  ])('%j', (input, want) => {
    expect(route(input, idle)).toEqual(want);
  });

  it(`queues a plan or another repository like any command; \
repo and an unknown name answer even while something waits`, () => {
    expect(route('@api plan: x', working)).toEqual({
      kind: 'queue',
      prompt: 'x',
      position: 3,
      mode: 'plan',
      repo: 'api',
    });
    expect(route('repo api', { ...contexts.question!, repos })).toEqual({ kind: 'repo', name: 'api' });
    expect(route('repos are slow', { ...contexts.plan!, repos })).toMatchObject({
      kind: 'decide',
      decision: { action: 'revise', message: 'repos are slow' },
    });
    expect(route('@web', { ...contexts.working!, repos })).toEqual({ kind: 'repoUsage', name: 'web' });
    expect(route('@nope x', { queued: 0 })).toEqual({ kind: 'unknownRepo', name: 'nope' });
    expect(route(`plan: ${'x'.repeat(8193)}`, idle)).toEqual({ kind: 'tooLong' });
  });
});
