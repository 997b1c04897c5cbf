// The scripted model's grammar (README "Scripted model") and how it reads a conversation and
// plans its next turn. The server with the real Claude Code: test/integration/agent-*.test.ts.
import { afterAll, describe, expect, it } from 'vitest';
import { readConversation, type MessagesRequest } from '../../runner-image/scripted-model/conversation.ts';
import { parseScenario, parseStep, planText } from '../../runner-image/scripted-model/scenario.ts';
import { startScriptedModel } from '../../runner-image/scripted-model/server.ts';
import { nextTurn, type Reply } from '../../runner-image/scripted-model/turns.ts';
import { continuePrompt } from '../../runner-image/continue-prompt.ts';

const TOOLS = [{ name: 'Bash' }, { name: 'Write' }, { name: 'Read' }];
const reminder = (text: string) => ({ type: 'text', text: `<system-reminder>\n${text}\n</system-reminder>` });
const prompt = (text: string, ...reminders: string[]) => ({
  role: 'user',
  content: [
    reminder('# Environment\n - Primary working directory: /w/repo'),
    ...reminders.map(reminder),
    { type: 'text', text },
  ],
});

/** Plays the model against a conversation that grows with `answer` for each tool call. */
function play(
  text: string,
  answer: (name: string, input: unknown) => { error?: boolean; text: string },
  ...reminders: string[]
): Reply[] {
  const messages: NonNullable<MessagesRequest['messages']> = [prompt(text, ...reminders) as never];
  const served = new Set<string>();
  const replies: Reply[] = [];
  for (let turn = 0; turn < 20; turn++) {
    const body: MessagesRequest = { tools: TOOLS, messages };
    const conversation = readConversation(body);
    const reply = nextTurn({ steps: parseScenario(conversation.prompt), conversation, served, key: 'k' });
    replies.push(reply);
    if (reply.kind === 'error') continue;
    if (!reply.tool) return replies;
    const input: unknown = JSON.parse(reply.tool.json);
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: reply.tool.id, name: reply.tool.name, input }],
    });
    const result = answer(reply.tool.name, input);
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: reply.tool.id, is_error: result.error, content: result.text }],
    });
  }
  throw new Error('the scenario did not end');
}

const summary = (replies: Reply[]) =>
  replies.map((r) =>
    r.kind === 'error'
      ? `error ${r.status}`
      : r.tool
        ? `${r.tool.name}${r.text ? ` (${r.text})` : ''}`
        : `end: ${r.text}`,
  );

describe('scripted model grammar', () => {
  it('parses every step kind', () => {
    const steps = parseScenario(
      [
        'script: progress: Reading the code',
        'write: src/a.ts = export const a = 1;\\nexport const b = 2;',
        'tool: Bash {"command":"npm test"}',
        'ask: Which database? | Redis | In-memory',
        'sleep: 250',
        'plan: 1. add the cache\\n2. test it',
        'error: 500',
        'fail: tests failed',
        'say: All done\\tthanks',
      ].join('\n'),
    );
    expect(steps).toEqual([
      { kind: 'progress', text: 'Reading the code' },
      { kind: 'write', path: 'src/a.ts', content: 'export const a = 1;\nexport const b = 2;' },
      { kind: 'tool', tool: 'Bash', json: '{"command":"npm test"}' },
      { kind: 'ask', question: 'Which database?', options: ['Redis', 'In-memory'] },
      { kind: 'sleep', ms: 250 },
      { kind: 'plan', text: '1. add the cache\n2. test it' },
      { kind: 'error', status: 500 },
      { kind: 'fail', message: 'tests failed' },
      { kind: 'say', text: 'All done\tthanks' },
    ]);
  });

  it('keeps malformed lines: broken JSON goes to the tool call as it is, other lines are said', () => {
    expect(parseStep('tool: Bash {broken')).toEqual({ kind: 'tool', tool: 'Bash', json: '{broken' });
    expect(parseStep('tool: Glob')).toEqual({ kind: 'tool', tool: 'Glob', json: '{}' });
    expect(parseStep('sleep: soon')).toEqual({ kind: 'say', text: 'sleep: soon' });
    expect(parseStep('error: 200')).toEqual({ kind: 'say', text: 'error: 200' });
    expect(parseStep('write: no equals sign')).toEqual({ kind: 'say', text: 'write: no equals sign' });
    expect(parseStep('hello world')).toEqual({ kind: 'say', text: 'hello world' });
    expect(parseStep('   ')).toBeUndefined();
    expect(parseStep('fail:')).toEqual({ kind: 'fail', message: 'scripted failure' });
    expect(parseStep('sleep: 99999999')).toEqual({ kind: 'sleep', ms: 600_000 });
  });

  it('runs the built-in demo for any other prompt, and proposes a plan from the steps', () => {
    const steps = parseScenario('make the navbar sticky');
    expect(steps.map((s) => s.kind)).toEqual(['progress', 'write', 'say']);
    expect(steps[1]).toMatchObject({
      kind: 'write',
      path: 'TETHER_DEMO.md',
      content: expect.stringContaining('make the navbar sticky'),
    });
    expect(
      planText(parseScenario('script:\nwrite: a.txt = x\ntool: Bash {}\nask: Go? | yes | no\nsleep: 5\nsay: ok')),
    ).toBe('1. write a.txt\n2. use Bash\n3. ask "Go?"\n4. ok');
    expect(planText(parseScenario('script:\nplan: my own plan\nsay: ok'))).toBe('my own plan');
  });
});

describe('scripted model turns', () => {
  const ok = () => ({ text: 'done' });

  it('one step a turn; texts ride along with the next tool call; sleeps delay it', () => {
    const replies = play(
      'script:\nprogress: Reading\nsay: Looking around\nsleep: 40\nwrite: notes.md = hi\nsay: Wrote notes.',
      ok,
    );
    expect(summary(replies)).toEqual(['mcp__tether__progress', 'Write (Looking around)', 'end: Wrote notes.']);
    expect(replies[1]).toMatchObject({
      delayMs: 40,
      tool: { json: '{"file_path":"/w/repo/notes.md","content":"hi"}' },
    });
  });

  it('reads a file Claude Code says it has not read, then writes again', () => {
    const seen: string[] = [];
    const replies = play('script:\nwrite: README.md = new', (name) => {
      seen.push(name);
      return seen.length === 1
        ? {
            error: true,
            text: '<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>',
          }
        : ok();
    });
    expect(summary(replies)).toEqual(['Write', 'Read', 'Write', 'end: Done.']);
  });

  it('a continue turn after a lost runner goes on with the scenario; an interrupted call is made again', () => {
    const write = { type: 'tool_use', id: 'toolu_sm_do_0_aaaaaaaaaaaa', name: 'Write', input: {} };
    const bash = { type: 'tool_use', id: 'toolu_sm_do_1_bbbbbbbbbbbb', name: 'Bash', input: {} };
    const result = (id: string, text: string) => ({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: text, is_error: text.startsWith('[') }],
    });
    const turn = (...messages: unknown[]) => {
      const conversation = readConversation({ tools: TOOLS, messages: messages as never });
      return nextTurn({ steps: parseScenario(conversation.prompt), conversation, served: new Set(), key: 'k' });
    };
    const script = prompt('script:\nwrite: a.txt = a\ntool: Bash {"command":"make"}\nsay: Made.');
    const again = prompt(continuePrompt('The user allowed your Bash call; make it again.'));
    const interrupted = "[Tool call interrupted: the session ended before this call's result was recorded]";
    const cut = [script, { role: 'assistant', content: [write] }, result(write.id, 'ok')];
    expect(
      summary([turn(...cut, { role: 'assistant', content: [bash] }, result(bash.id, interrupted), again)]),
    ).toEqual(['Bash']);
    expect(summary([turn(...cut, again)])).toEqual(['Bash']);
    expect(summary([turn(...cut, { role: 'assistant', content: [bash] }, result(bash.id, 'made'), again)])).toEqual([
      'end: Made.',
    ]);
  });

  it(`a retryable error happens once, a 400 every time; without \
say: the end names what did not run and the answers`, () => {
    expect(summary(play('script:\nerror: 529\nsay: recovered', ok))).toEqual(['error 529', 'end: recovered']);
    const conversation = readConversation({ tools: TOOLS, messages: [prompt('script:\nerror: 400') as never] });
    const served = new Set<string>();
    const fatal = [1, 2, 3].map(() =>
      nextTurn({ steps: parseScenario(conversation.prompt), conversation, served, key: 'k' }),
    );
    expect(fatal.map((r) => r.kind === 'error' && r.status)).toEqual([400, 400, 400]);
    const replies = play('script:\ntool: Bash {"command":"rm -rf /"}\nask: Which? | A | B', (name) =>
      name === 'Bash'
        ? { error: true, text: 'no shell today' }
        : { text: 'Your questions have been answered: "Which?"="B". You can now continue.' },
    );
    expect(summary(replies).at(-1)).toBe('end: Bash did not run: no shell today\nWhich? → B');
  });

  it('in plan mode writes the plan file, calls ExitPlanMode, then runs the steps; a rejected plan ends it', () => {
    const planMode =
      'Plan mode is active. …\n## Plan File Info:\nNo plan file exists yet. You should create your plan at ' +
      '/h/.claude/plans/a-b-c.md using the Write tool.';
    const approved = play(
      'script:\nplan: Add notes\nwrite: notes.md = hi',
      (name) => ({ text: name === 'ExitPlanMode' ? 'User has approved your plan. ## Exited Plan Mode' : 'done' }),
      planMode,
    );
    expect(summary(approved)).toEqual(['Write', 'ExitPlanMode', 'Write', 'end: Done.']);
    expect(approved[0]).toMatchObject({
      tool: { json: '{"file_path":"/h/.claude/plans/a-b-c.md","content":"Add notes"}' },
    });
    const rejected = play(
      'script:\nwrite: notes.md = hi',
      (name) => (name === 'ExitPlanMode' ? { error: true, text: 'too big' } : ok()),
      planMode,
    );
    expect(summary(rejected)).toEqual(['Write', 'ExitPlanMode', 'end: Plan not approved: too big']);
  });
});

describe('scripted model over HTTP', () => {
  const started = startScriptedModel();
  afterAll(async () => (await started).close());

  it(`serves the Messages API only: what it was asked is \
for the process that started it, not for anything on loopback`, async () => {
    const model = await started;
    const asked = await fetch(`${model.url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({ messages: [prompt('script:\nsay: the secret plan')] }),
    });
    expect(asked.status).toBe(200);
    await asked.text();
    expect(model.requests.map((r) => r.path)).toEqual(['/v1/messages']);
    for (const path of ['/_requests', '/_requests?x=1']) {
      const listed = await fetch(`${model.url}${path}`);
      expect(listed.status).toBe(404);
      expect(await listed.text()).not.toContain('the secret plan');
    }
  });
});
