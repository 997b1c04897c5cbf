// What the real Claude Code cannot be made to do on demand, fed as recorded Agent SDK messages
// (typed with the SDK's own types): claude-code #50728, a question resolved with empty answers
// without asking. Plus the adapter's pure parts: results in plain words, the instructions.
// Everything else runs the real process (test/integration/agent-*.test.ts, runner-*.test.ts).
import type {
  CanUseTool,
  Options,
  PermissionResult,
  SDKAssistantMessage,
  SDKMessage,
  SDKResultError,
  SDKResultSuccess,
  SDKSystemMessage,
  SDKUserMessage,
} from '@anthropic-ai/claude-agent-sdk';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { systemPromptAppend } from '../../runner-image/agents/claude-options.ts';
import { plainApiError, toResult } from '../../runner-image/agents/claude-result.ts';
import { checkAnswers } from '../../runner-image/agents/claude-conversation.ts';
import { ClaudeAgent, type QueryFn } from '../../runner-image/agents/claude.ts';
import type { AgentEvent, AgentHost, ToolDecision, ToolRequest } from '../../runner-image/agents/types.ts';

const SESSION = '5f1c0c8e-5c0e-4b8e-9d55-3a1f00000001';
const uuid = () => crypto.randomUUID();

const resultUsage = (input: number, output: number): SDKResultSuccess['usage'] => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 100,
  cache_read_input_tokens: 900,
  cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 100 },
  fallback_credit: null,
  inference_geo: 'us',
  iterations: [],
  output_tokens_details: { thinking_tokens: 0 },
  server_tool_use: { web_fetch_requests: 0, web_search_requests: 0 },
  service_tier: 'standard',
  speed: 'standard',
});

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 100,
  cache_read_input_tokens: 900,
  cache_creation: null,
  fallback_credit: null,
  inference_geo: null,
  iterations: null,
  output_tokens_details: null,
  server_tool_use: null,
  service_tier: 'standard' as const,
  speed: null,
});

const init: SDKSystemMessage = {
  type: 'system',
  subtype: 'init',
  apiKeySource: 'ANTHROPIC_API_KEY',
  claude_code_version: '2.1.0',
  cwd: '/workspace/repo',
  tools: ['Read', 'Edit', 'Bash', 'AskUserQuestion'],
  mcp_servers: [{ name: 'tether', status: 'connected' }],
  model: 'claude-sonnet-4-5',
  permissionMode: 'default',
  slash_commands: [],
  output_style: 'default',
  skills: [],
  plugins: [],
  uuid: uuid(),
  session_id: SESSION,
};

function assistant(content: SDKAssistantMessage['message']['content']): SDKAssistantMessage {
  return {
    type: 'assistant',
    parent_tool_use_id: null,
    uuid: uuid(),
    session_id: SESSION,
    message: {
      id: `msg_${uuid()}`,
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content,
      container: null,
      context_management: null,
      diagnostics: null,
      stop_details: null,
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: usage(10, 5),
    },
  };
}

const toolUse = (id: string, name: string, input: Record<string, unknown>) => ({
  type: 'tool_use' as const,
  id,
  name,
  input,
});

function toolResult(toolUseId: string, text: string, isError = false): SDKUserMessage {
  return {
    type: 'user',
    parent_tool_use_id: null,
    session_id: SESSION,
    uuid: uuid(),
    message: {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: toolUseId, content: text, is_error: isError }],
    },
  };
}

function result(text: string, cost: number): SDKResultSuccess {
  return {
    type: 'result',
    subtype: 'success',
    duration_ms: 4200,
    duration_api_ms: 3900,
    is_error: false,
    num_turns: 3,
    result: text,
    stop_reason: 'end_turn',
    total_cost_usd: cost,
    usage: resultUsage(1200, 340),
    modelUsage: {},
    permission_denials: [],
    uuid: uuid(),
    session_id: SESSION,
  };
}

const QUESTION = {
  question: 'Which database should the cache use?',
  header: 'Cache',
  multiSelect: false,
  options: [{ label: 'Redis' }, { label: 'In-memory' }],
};

/** A host that answers like a phone user would, recording what it was asked. */
function recordingHost(answers: (request: ToolRequest) => ToolDecision) {
  const asked: ToolRequest[] = [];
  const events: AgentEvent[] = [];
  const host: AgentHost = {
    canUseTool: async (request) => (asked.push(request), answers(request)),
    event: (event) => void events.push(event),
    costGate: async () => undefined,
    costHeld: () => false,
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
        seen.decisions.push(
          (await canUseTool(name, toolInput, {
            signal: new AbortController().signal,
            toolUseID,
            requestId: `req_${toolUseID}`,
          }))!,
        );
      } else if ('readPrompt' in step) {
        await readPrompt();
      } else {
        yield step;
      }
    }
  };
}

const log = pino({ level: 'silent' });
const MODEL = 'claude-sonnet-4-5';

describe('claude adapter with recorded SDK messages', { timeout: 30_000 }, () => {
  it('never allows AskUserQuestion with empty answers (claude-code #50728)', () => {
    expect(
      checkAnswers('AskUserQuestion', { behavior: 'allow', updatedInput: { questions: [QUESTION], answers: {} } })
        .behavior,
    ).toBe('deny');
    expect(
      checkAnswers('AskUserQuestion', { behavior: 'allow', updatedInput: { answers: { q: '  ' } } }).behavior,
    ).toBe('deny');
    expect(
      checkAnswers('AskUserQuestion', { behavior: 'allow', updatedInput: { answers: { q: 'Redis' } } }).behavior,
    ).toBe('allow');
    expect(checkAnswers('Bash', { behavior: 'allow' }).behavior).toBe('allow');
  });

  it(`a question the CLI resolved with empty answers without asking \
us is asked directly and answered in the next turn`, async () => {
    const seen = { decisions: [] as PermissionResult[], prompts: [] as string[] };
    const steps: Step[] = [
      init,
      assistant([toolUse('toolu_q', 'AskUserQuestion', { questions: [QUESTION] })]),
      toolResult(
        'toolu_q',
        "User has answered your questions: . You can now continue with the user's answers in mind.",
      ),
      result('I assumed in-memory.', 0.1),
      { readPrompt: true },
      result('Switched to Redis as you asked.', 0.2),
    ];
    const { host, asked, events } = recordingHost((r) => ({
      behavior: 'allow',
      updatedInput: { ...r.input, answers: { [QUESTION.question]: 'Redis' } },
    }));
    const agent = new ClaudeAgent({ env: {}, model: MODEL, log, workspace: '/w', queryFn: replay(steps, seen) });
    const outcome = await agent.run(
      { prompt: 'add a cache', cwd: '/w', mode: 'run', signal: new AbortController().signal },
      host,
    );
    expect(asked).toEqual([{ id: 'toolu_q-direct', tool: 'AskUserQuestion', input: { questions: [QUESTION] } }]);
    expect(seen.prompts[1]).toContain('Which database should the cache use? → Redis');
    expect(outcome).toMatchObject({ ok: true, summary: 'Switched to Redis as you asked.' });
    // Each turn's own usage reaches the meter; Claude Code's running total (0.1, then 0.2) does not.
    expect(events.filter((e) => e.type === 'turn-usage')).toEqual([
      { type: 'turn-usage', usage: resultUsage(1200, 340) },
      { type: 'turn-usage', usage: resultUsage(1200, 340) },
    ]);
    expect(outcome).not.toHaveProperty('costUsd');
  });

  it('an error result is a failure in plain words; a query() that throws is one too, never a crash', async () => {
    const failed: SDKResultError = {
      type: 'result',
      subtype: 'error_max_turns',
      duration_ms: 900,
      duration_api_ms: 800,
      is_error: true,
      num_turns: 30,
      stop_reason: null,
      total_cost_usd: 0.05,
      usage: resultUsage(10, 5),
      modelUsage: {},
      permission_denials: [],
      errors: ['max turns reached'],
      uuid: uuid(),
      session_id: SESSION,
    };
    expect(toResult(failed, undefined, [])).toMatchObject({
      ok: false,
      exitCode: 1,
      message: 'max turns reached',
      tokens: { input: 1010, output: 5 },
    });
    const apiError = {
      ...result(
        'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}',
        0,
      ),
      is_error: true,
    };
    expect(toResult(apiError, 'Claude Code stopped: Claude Code returned an error result', [])).toMatchObject({
      ok: false,
      summary: undefined,
      message: 'The Claude API refused the request (400): prompt is too long',
    });
    const broken: QueryFn = async function* () {
      yield init;
      throw new Error('Claude Code process exited with code 1');
    };
    const outcome = await new ClaudeAgent({ env: {}, model: MODEL, log, workspace: '/w', queryFn: broken }).run(
      { prompt: 'x', cwd: '/w', mode: 'run', signal: new AbortController().signal },
      recordingHost(() => ({ behavior: 'allow' })).host,
    );
    expect(outcome).toMatchObject({
      ok: false,
      message: 'Claude Code stopped: Claude Code process exited with code 1',
    });
  });

  it('API failures read as plain words by status', () => {
    expect(
      plainApiError(
        'API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
      ),
    ).toBe('The Claude API did not accept the API key (401): invalid x-api-key');
    expect(plainApiError('API Error: 529 Overloaded')).toBe(
      'The Claude API is unavailable right now (529): Overloaded',
    );
    expect(plainApiError('API Error: 429')).toBe('The Claude API is rate-limiting this installation (429).');
    expect(plainApiError('Claude Code stopped: spawn ENOENT')).toBe('Claude Code stopped: spawn ENOENT');
  });

  it("appends the repository's CLAUDE.md after the image's instructions (no settings source reads it)", async () => {
    expect(systemPromptAppend('# Working inside Tether', undefined)).toBe('# Working inside Tether');
    expect(systemPromptAppend('# Working inside Tether', 'Use pnpm.\n')).toBe(
      "# Working inside Tether\n\n# The repository's CLAUDE.md\n\nUse pnpm.\n",
    );
    const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
    mkdirSync(join(workspace, 'repo'));
    writeFileSync(join(workspace, 'repo', 'CLAUDE.md'), 'Use pnpm.\n');
    const seen = {
      decisions: [] as PermissionResult[],
      prompts: [] as string[],
      options: undefined as Options | undefined,
    };
    await new ClaudeAgent({
      env: {},
      model: MODEL,
      log,
      workspace,
      instructions: '# Tether',
      queryFn: replay([init, result('ok', 0)], seen),
    }).run(
      { prompt: 'x', cwd: join(workspace, 'repo'), mode: 'run', signal: new AbortController().signal },
      recordingHost(() => ({ behavior: 'allow' })).host,
    );
    expect(seen.options?.systemPrompt).toEqual({
      type: 'preset',
      preset: 'claude_code',
      append: "# Tether\n\n# The repository's CLAUDE.md\n\nUse pnpm.\n",
    });
  });

  it("a CLAUDE.md linked to the runner's own environment is left out, and the phone is told why", async () => {
    process.env.TETHER_TEST_CANARY = 'canary-in-the-runners-environment';
    const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
    mkdirSync(join(workspace, 'repo'));
    symlinkSync('/proc/self/environ', join(workspace, 'repo', 'CLAUDE.md'));
    const seen = {
      decisions: [] as PermissionResult[],
      prompts: [] as string[],
      options: undefined as Options | undefined,
    };
    const { host, events } = recordingHost(() => ({ behavior: 'allow' }));
    await new ClaudeAgent({
      env: {},
      model: MODEL,
      log,
      workspace,
      instructions: '# Tether',
      queryFn: replay([init, result('ok', 0)], seen),
    }).run({ prompt: 'x', cwd: join(workspace, 'repo'), mode: 'run', signal: new AbortController().signal }, host);
    expect(JSON.stringify(seen.options?.systemPrompt)).not.toContain('canary-in-the-runners-environment');
    expect(seen.options?.systemPrompt).toEqual({ type: 'preset', preset: 'claude_code', append: '# Tether' });
    expect(events).toContainEqual({
      type: 'progress',
      text: "The repository's CLAUDE.md was left out (a symlink leading out of the checkout)",
    });
  });
});
