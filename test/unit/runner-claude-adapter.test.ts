// The claude adapter fed recorded Agent SDK messages (typed with the SDK's own types): no network,
// no Claude Code process. The fake query() calls canUseTool the way the CLI does.
import type {
  CanUseTool, Options, PermissionResult, SDKAssistantMessage, SDKMessage, SDKResultError, SDKResultSuccess, SDKSystemMessage, SDKUserMessage,
} from '@anthropic-ai/claude-agent-sdk';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { ClaudeAgent, checkAnswers, type QueryFn } from '../../runner-image/agents/claude.ts';
import type { AgentEvent, AgentHost, ToolDecision, ToolRequest } from '../../runner-image/agents/types.ts';
import { processGroup } from '../support/runner.ts';

const SESSION = '5f1c0c8e-5c0e-4b8e-9d55-3a1f00000001';
const uuid = () => crypto.randomUUID();

const resultUsage = (input: number, output: number): SDKResultSuccess['usage'] => ({
  input_tokens: input, output_tokens: output, cache_creation_input_tokens: 100, cache_read_input_tokens: 900,
  cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 100 }, fallback_credit: null, inference_geo: 'us',
  iterations: [], output_tokens_details: { thinking_tokens: 0 }, server_tool_use: { web_fetch_requests: 0, web_search_requests: 0 },
  service_tier: 'standard', speed: 'standard',
});

const usage = (input: number, output: number) => ({
  input_tokens: input, output_tokens: output, cache_creation_input_tokens: 100, cache_read_input_tokens: 900,
  cache_creation: null, fallback_credit: null, inference_geo: null, iterations: null, output_tokens_details: null,
  server_tool_use: null, service_tier: 'standard' as const, speed: null,
});

const init: SDKSystemMessage = {
  type: 'system', subtype: 'init', apiKeySource: 'ANTHROPIC_API_KEY', claude_code_version: '2.1.0', cwd: '/workspace/repo',
  tools: ['Read', 'Edit', 'Bash', 'AskUserQuestion'], mcp_servers: [{ name: 'tether', status: 'connected' }], model: 'claude-sonnet-4-5',
  permissionMode: 'default', slash_commands: [], output_style: 'default', skills: [], plugins: [], uuid: uuid(), session_id: SESSION,
};

function assistant(content: SDKAssistantMessage['message']['content']): SDKAssistantMessage {
  return {
    type: 'assistant', parent_tool_use_id: null, uuid: uuid(), session_id: SESSION,
    message: {
      id: `msg_${uuid()}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content, container: null, context_management: null,
      diagnostics: null, stop_details: null, stop_reason: 'tool_use', stop_sequence: null, usage: usage(10, 5),
    },
  };
}

const toolUse = (id: string, name: string, input: Record<string, unknown>) => ({ type: 'tool_use' as const, id, name, input });

function toolResult(toolUseId: string, text: string, isError = false): SDKUserMessage {
  return {
    type: 'user', parent_tool_use_id: null, session_id: SESSION, uuid: uuid(),
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: text, is_error: isError }] },
  };
}

function result(text: string, cost: number): SDKResultSuccess {
  return {
    type: 'result', subtype: 'success', duration_ms: 4200, duration_api_ms: 3900, is_error: false, num_turns: 3, result: text,
    stop_reason: 'end_turn', total_cost_usd: cost, usage: resultUsage(1200, 340), modelUsage: {}, permission_denials: [], uuid: uuid(), session_id: SESSION,
  };
}

const QUESTION = { question: 'Which database should the cache use?', header: 'Cache', multiSelect: false, options: [{ label: 'Redis' }, { label: 'In-memory' }] };

/** A host that answers like a phone user would, recording what it was asked. */
function recordingHost(answers: (request: ToolRequest) => ToolDecision) {
  const asked: ToolRequest[] = [];
  const events: AgentEvent[] = [];
  const host: AgentHost = {
    canUseTool: async (request) => (asked.push(request), answers(request)),
    event: (event) => void events.push(event),
    tools: {},
  };
  return { host, asked, events };
}

/** A query() replaying a script: yields messages, calls canUseTool for ('ask', …) steps, reads prompts. */
type Step = SDKMessage | { ask: [string, string, Record<string, unknown>] } | { readPrompt: true };
function replay(steps: Step[], seen: { decisions: PermissionResult[]; prompts: string[]; options?: Options }): QueryFn {
  return async function* ({ prompt, options }) {
    seen.options = options;
    const input = prompt[Symbol.asyncIterator]();
    const readPrompt = async () => {
      const next = await input.next();
      if (!next.done) seen.prompts.push(String(next.value.message.content));
    };
    await readPrompt();
    for (const step of steps) {
      if ('ask' in step) {
        const [toolUseID, name, toolInput] = step.ask;
        const canUseTool = options.canUseTool as CanUseTool;
        seen.decisions.push((await canUseTool(name, toolInput, { signal: new AbortController().signal, toolUseID, requestId: `req_${toolUseID}` }))!);
      } else if ('readPrompt' in step) {
        await readPrompt();
      } else {
        yield step;
      }
    }
  };
}

const log = pino({ level: 'silent' });

describe('claude adapter with recorded SDK messages', { timeout: 30_000 }, () => {
  it('maps progress, a question (answers via updatedInput.answers), a tool denial, session id, cost and tokens', async () => {
    const seen = { decisions: [] as PermissionResult[], prompts: [] as string[], options: undefined as Options | undefined };
    const steps: Step[] = [
      init,
      assistant([{ type: 'text', text: 'Looking at the navbar.\n::progress:: Reading Navbar.tsx', citations: null }, toolUse('toolu_read', 'Read', { file_path: '/workspace/repo/src/Navbar.tsx' })]),
      toolResult('toolu_read', 'export function Navbar() {}'),
      assistant([toolUse('toolu_ask', 'AskUserQuestion', { questions: [QUESTION] })]),
      { ask: ['toolu_ask', 'AskUserQuestion', { questions: [QUESTION] }] },
      toolResult('toolu_ask', 'User has answered your questions: "Which database should the cache use?"="Redis".'),
      assistant([toolUse('toolu_bash', 'Bash', { command: 'npm install ioredis' })]),
      { ask: ['toolu_bash', 'Bash', { command: 'npm install ioredis' }] },
      toolResult('toolu_bash', 'Permission denied: no new dependencies', true),
      result('Added a Redis-backed cache.', 0.41),
    ];
    const { host, asked, events } = recordingHost((r) => (r.tool === 'AskUserQuestion'
      ? { behavior: 'allow', updatedInput: { ...r.input, answers: { [QUESTION.question]: 'Redis' } } }
      : { behavior: 'deny', message: 'no new dependencies' }));
    const agent = new ClaudeAgent({ env: { PATH: '/usr/bin' }, log, queryFn: replay(steps, seen) });
    const outcome = await agent.run({ prompt: 'add a cache', cwd: '/workspace/repo', mode: 'run', resume: 'prev-session', signal: new AbortController().signal }, host);

    expect(seen.prompts).toEqual(['add a cache']);
    expect(seen.options).toMatchObject({ cwd: '/workspace/repo', resume: 'prev-session', permissionMode: 'default' });
    expect(seen.options?.abortController).toBeInstanceOf(AbortController);
    expect(asked.map((r) => [r.id, r.tool])).toEqual([['toolu_ask', 'AskUserQuestion'], ['toolu_bash', 'Bash']]);
    expect(seen.decisions).toEqual([
      { behavior: 'allow', updatedInput: { questions: [QUESTION], answers: { [QUESTION.question]: 'Redis' } } },
      { behavior: 'deny', message: 'no new dependencies' },
    ]);
    expect(events).toContainEqual({ type: 'session', id: SESSION });
    expect(events).toContainEqual({ type: 'tool_use', tool: 'Read', input: { file_path: '/workspace/repo/src/Navbar.tsx' } });
    expect(events).toContainEqual({ type: 'text', text: 'Looking at the navbar.\n::progress:: Reading Navbar.tsx' });
    expect(outcome).toEqual({
      ok: true, exitCode: 0, summary: 'Added a Redis-backed cache.', message: undefined, sessionId: SESSION,
      costUsd: 0.41, tokens: { input: 1200 + 100 + 900, output: 340 },
    });
  });

  it('never allows AskUserQuestion with empty answers (claude-code #50728)', () => {
    expect(checkAnswers('AskUserQuestion', { behavior: 'allow', updatedInput: { questions: [QUESTION], answers: {} } }).behavior).toBe('deny');
    expect(checkAnswers('AskUserQuestion', { behavior: 'allow', updatedInput: { answers: { q: '  ' } } }).behavior).toBe('deny');
    expect(checkAnswers('AskUserQuestion', { behavior: 'allow', updatedInput: { answers: { q: 'Redis' } } }).behavior).toBe('allow');
    expect(checkAnswers('Bash', { behavior: 'allow' }).behavior).toBe('allow');
  });

  it('a question the CLI resolved with empty answers without asking us is asked directly and answered in the next turn', async () => {
    const seen = { decisions: [] as PermissionResult[], prompts: [] as string[] };
    const steps: Step[] = [
      init,
      assistant([toolUse('toolu_q', 'AskUserQuestion', { questions: [QUESTION] })]),
      toolResult('toolu_q', "User has answered your questions: . You can now continue with the user's answers in mind."),
      result('I assumed in-memory.', 0.1),
      { readPrompt: true },
      result('Switched to Redis as you asked.', 0.2),
    ];
    const { host, asked } = recordingHost((r) => ({ behavior: 'allow', updatedInput: { ...r.input, answers: { [QUESTION.question]: 'Redis' } } }));
    const agent = new ClaudeAgent({ env: {}, log, queryFn: replay(steps, seen) });
    const outcome = await agent.run({ prompt: 'add a cache', cwd: '/w', mode: 'run', signal: new AbortController().signal }, host);
    expect(asked).toEqual([{ id: 'toolu_q-direct', tool: 'AskUserQuestion', input: { questions: [QUESTION] } }]);
    expect(seen.prompts[1]).toContain('Which database should the cache use? → Redis');
    expect(outcome).toMatchObject({ ok: true, summary: 'Switched to Redis as you asked.', costUsd: 0.2 });
  });

  it('plan mode runs with permissionMode plan; a scripted-agent id is not resumed; an error result is a failure', async () => {
    const seen = { decisions: [] as PermissionResult[], prompts: [] as string[], options: undefined as Options | undefined };
    const failed: SDKResultError = {
      type: 'result', subtype: 'error_max_turns', duration_ms: 900, duration_api_ms: 800, is_error: true, num_turns: 30, stop_reason: null,
      total_cost_usd: 0.05, usage: resultUsage(10, 5), modelUsage: {}, permission_denials: [], errors: ['max turns reached'], uuid: uuid(), session_id: SESSION,
    };
    const agent = new ClaudeAgent({ env: {}, log, queryFn: replay([init, failed], seen) });
    const outcome = await agent.run({ prompt: 'plan it', cwd: '/w', mode: 'plan', resume: 'script-1234', signal: new AbortController().signal }, recordingHost(() => ({ behavior: 'allow' })).host);
    expect(seen.options?.permissionMode).toBe('plan');
    expect(seen.options?.resume).toBeUndefined();
    expect(outcome).toMatchObject({ ok: false, exitCode: 1, message: 'max turns reached', costUsd: 0.05 });
  });

  it('a query() that throws becomes a failed result, not a crash', async () => {
    const broken: QueryFn = async function* () {
      yield init;
      throw new Error('Claude Code process exited with code 1');
    };
    const outcome = await new ClaudeAgent({ env: {}, log, queryFn: broken }).run(
      { prompt: 'x', cwd: '/w', mode: 'run', signal: new AbortController().signal }, recordingHost(() => ({ behavior: 'allow' })).host);
    expect(outcome).toMatchObject({ ok: false, message: 'Claude Code stopped: Claude Code process exited with code 1' });
  });

  it('runs Claude Code in its own process group and kills the whole group on abort', async () => {
    let pid = 0;
    const spawning: QueryFn = async function* ({ options }) {
      yield init;
      const child = options.spawnClaudeCodeProcess!({ command: 'sh', args: ['-c', 'sleep 30 & sleep 30'], cwd: '/', env: { PATH: '/usr/bin:/bin' }, signal: new AbortController().signal });
      pid = (child as unknown as { pid: number }).pid;
      await new Promise((_resolve, reject) => options.abortController!.signal.addEventListener('abort', () => reject(new Error('aborted'))));
    };
    const stop = new AbortController();
    const running = new ClaudeAgent({ env: {}, log, queryFn: spawning }).run({ prompt: 'x', cwd: '/', mode: 'run', signal: stop.signal }, recordingHost(() => ({ behavior: 'allow' })).host);
    await vi.waitFor(() => expect(pid).toBeGreaterThan(0));
    await vi.waitFor(() => expect(processGroup(pid).length).toBeGreaterThanOrEqual(2));
    stop.abort('SIGTERM');
    expect(await running).toMatchObject({ ok: false, message: 'stopped' });
    await vi.waitFor(() => expect(processGroup(pid).length).toBe(0));
  });
});
