// The `claude` agent adapter: @anthropic-ai/claude-agent-sdk query() with canUseTool, resume,
// abortController and cwd. Claude Code runs in its own process group (spawnClaudeCodeProcess).
import { spawn, type ChildProcess } from 'node:child_process';
import {
  createSdkMcpServer, query, tool,
  type CanUseTool, type Options, type PermissionResult, type SDKMessage, type SDKResultMessage, type SDKUserMessage,
} from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import { z } from 'zod/v4';
import { onLines } from './lines.ts';
import { killGroup, trackGroup } from './process-group.ts';
import { SCREENSHOT_TOOL, type Agent, type AgentHost, type AgentResult, type AgentRunOptions, type ToolDecision } from './types.ts';
import { UserInput, userMessage } from './user-input.ts';

export type QueryFn = (params: { prompt: AsyncIterable<SDKUserMessage>; options: Options }) => AsyncIterable<SDKMessage>;

export interface ClaudeAgentDeps {
  env: Record<string, string>;
  log: Logger;
  claudePath?: string;
  /** Extra system instructions (the image's CLAUDE.md). */
  instructions?: string;
  /** The SDK's query(); tests pass recorded messages instead. */
  queryFn?: QueryFn;
}

type Block = { type: string; text?: unknown; name?: unknown; id?: unknown; input?: unknown; tool_use_id?: unknown; content?: unknown };

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content
    : Array.isArray(content) ? content.map((c: Block) => (typeof c?.text === 'string' ? c.text : '')).join('\n') : '';

/** An allow for AskUserQuestion must carry real answers (claude-code #50728): otherwise deny. */
export function checkAnswers(toolName: string, decision: ToolDecision): ToolDecision {
  if (toolName !== 'AskUserQuestion' || decision.behavior !== 'allow') return decision;
  const answers = decision.updatedInput?.answers;
  const usable = answers && typeof answers === 'object' && Object.values(answers).some((a) => typeof a === 'string' && a.trim());
  return usable ? decision : { behavior: 'deny', message: 'The user gave no answer. Do not assume one: ask again or stop.' };
}

export class ClaudeAgent implements Agent {
  readonly name = 'claude' as const;
  private readonly deps: ClaudeAgentDeps;

  constructor(deps: ClaudeAgentDeps) {
    this.deps = deps;
  }

  async run(options: AgentRunOptions, host: AgentHost): Promise<AgentResult> {
    const input = new UserInput();
    input.push(userMessage(options.prompt));
    const abortController = new AbortController();
    const children: ChildProcess[] = [];
    const stderr: string[] = [];
    const stop = () => {
      abortController.abort();
      for (const child of children) void killGroup(child);
    };
    options.signal.addEventListener('abort', stop, { once: true });

    const answered = new Set<string>();
    const questions = new Map<string, Record<string, unknown>>();
    let followUps = 0;
    let pushedSinceResult = 0;

    const canUseTool: CanUseTool = async (toolName, toolInput, { signal, toolUseID }) => {
      answered.add(toolUseID);
      const decision = checkAnswers(toolName, await host.canUseTool({ id: toolUseID, tool: toolName, input: toolInput }, signal));
      return decision as PermissionResult;
    };

    // #50728: the CLI resolved a question without asking us. Ask the user ourselves and send the
    // answer as the next user turn, so the agent never proceeds on an invented answer.
    const askDirectly = async (toolUseId: string, questionInput: Record<string, unknown>) => {
      followUps += 1;
      const decision = checkAnswers('AskUserQuestion', await host.canUseTool({ id: `${toolUseId}-direct`, tool: 'AskUserQuestion', input: questionInput }, options.signal));
      const answers = decision.behavior === 'allow' ? (decision.updatedInput?.answers as Record<string, string>) : undefined;
      const text = answers
        ? `Your question tool returned no answers because of a bug; my answers are:\n${Object.entries(answers).map(([q, a]) => `- ${q} → ${a}`).join('\n')}`
        : `Your question tool returned no answers because of a bug, and I did not answer: ${decision.behavior === 'deny' ? decision.message : ''}. Do not assume an answer.`;
      pushedSinceResult += 1;
      followUps -= 1;
      input.push(userMessage(text));
    };

    const spawnClaudeCodeProcess: Options['spawnClaudeCodeProcess'] = (spawnOptions) => {
      const child = spawn(spawnOptions.command, spawnOptions.args, { cwd: spawnOptions.cwd, env: spawnOptions.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
      this.deps.log.info({ pid: child.pid, agent: 'claude' }, 'agent started');
      trackGroup(child);
      children.push(child);
      void onLines(child.stderr, (line) => {
        stderr.push(line);
        if (stderr.length > 20) stderr.shift();
      }).catch(() => undefined);
      return child;
    };

    const screenshot = tool('screenshot', 'Capture a web page (a URL the dev server serves) as a JPEG for the user.', {
      url: z.string().describe('http(s) URL to capture'),
      fullPage: z.boolean().optional(),
      caption: z.string().max(200).optional().describe('one line shown under the image'),
    }, async (args) => ({ content: [{ type: 'text' as const, text: await host.tools[SCREENSHOT_TOOL]!(args) }] }));

    const sdkOptions: Options = {
      cwd: options.cwd,
      // An id from the scripted agent (no API key before) is not a Claude Code conversation.
      resume: options.resume?.startsWith('script-') ? undefined : options.resume,
      abortController,
      canUseTool,
      permissionMode: options.mode === 'plan' ? 'plan' : 'default',
      env: this.deps.env,
      pathToClaudeCodeExecutable: this.deps.claudePath,
      spawnClaudeCodeProcess,
      settingSources: ['project'],
      mcpServers: { tether: createSdkMcpServer({ name: 'tether', tools: [screenshot] }) },
      systemPrompt: { type: 'preset', preset: 'claude_code', append: this.deps.instructions },
    };

    let result: SDKResultMessage | undefined;
    let failure: string | undefined;
    try {
      for await (const message of (this.deps.queryFn ?? query)({ prompt: input, options: sdkOptions })) {
        if (message.type === 'system' && message.subtype === 'init') {
          host.event({ type: 'session', id: message.session_id });
        } else if (message.type === 'assistant') {
          for (const block of message.message.content as Block[]) {
            if (block.type === 'text' && typeof block.text === 'string') host.event({ type: 'text', text: block.text });
            if (block.type === 'tool_use' && typeof block.name === 'string') {
              host.event({ type: 'tool_use', tool: block.name, input: block.input });
              if (block.name === 'AskUserQuestion' && typeof block.id === 'string') questions.set(block.id, (block.input ?? {}) as Record<string, unknown>);
            }
          }
        } else if (message.type === 'user' && Array.isArray(message.message.content)) {
          for (const block of message.message.content as Block[]) {
            if (block.type !== 'tool_result' || typeof block.tool_use_id !== 'string') continue;
            host.event({ type: 'text', text: textOf(block.content).slice(0, 8000) });
            const asked = questions.get(block.tool_use_id);
            if (asked && !answered.has(block.tool_use_id)) void askDirectly(block.tool_use_id, asked);
          }
        } else if (message.type === 'result') {
          result = message;
          host.event({ type: 'session', id: message.session_id });
          if (followUps === 0 && pushedSinceResult === 0) input.close();
          pushedSinceResult = 0;
        }
      }
    } catch (error) {
      failure = options.signal.aborted ? 'stopped' : `Claude Code stopped: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      options.signal.removeEventListener('abort', stop);
      input.close();
      await Promise.all(children.map((c) => killGroup(c)));
    }
    return toResult(result, failure, stderr);
  }
}

function toResult(result: SDKResultMessage | undefined, failure: string | undefined, stderr: string[]): AgentResult {
  const usage = result?.usage as { input_tokens?: number; output_tokens?: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number } | undefined;
  const tokens = usage && {
    input: (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0),
    output: usage.output_tokens ?? 0,
  };
  const ok = !failure && result?.subtype === 'success' && !result.is_error;
  const message = ok ? undefined
    : failure ?? (result?.subtype === 'success' ? result.result : result?.errors.join('; ')) ?? (stderr.at(-1) || 'Claude Code ended without a result');
  return {
    ok,
    exitCode: ok ? 0 : 1,
    summary: result?.subtype === 'success' ? result.result : undefined,
    message,
    sessionId: result?.session_id,
    costUsd: result?.total_cost_usd,
    tokens,
  };
}
