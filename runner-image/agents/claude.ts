// The agent: Claude Code through @anthropic-ai/claude-agent-sdk query() with canUseTool, resume,
// abortController and cwd. Claude Code runs in its own process group (spawnClaudeCodeProcess);
// without an API key it talks to the scripted model (scripted-model/), never to anything else.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  query, type CanUseTool, type Options, type PermissionResult, type SDKMessage, type SDKResultMessage, type SDKUserMessage,
} from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import { autoAllowed, sdkOptions, type ClaudeSettings } from './claude-options.ts';
import { isMissingConversation, toResult } from './claude-result.ts';
import { onLines } from './lines.ts';
import { killGroup, trackGroup } from './process-group.ts';
import type { Agent, AgentHost, AgentResult, AgentRunOptions, ToolDecision } from './types.ts';
import { UserInput, userMessage } from './user-input.ts';

export type QueryFn = (params: { prompt: AsyncIterable<SDKUserMessage>; options: Options }) => AsyncIterable<SDKMessage>;

export interface ClaudeAgentDeps extends ClaudeSettings {
  log: Logger;
  /** The SDK's query(); unit tests pass recorded messages instead. */
  queryFn?: QueryFn;
}

/** Claude Code already keeps big outputs in a file and shows a preview; this bounds the rest. */
const TOOL_OUTPUT_MAX_CHARS = 64 * 1024;

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

interface Attempt { result: SDKResultMessage | undefined; failure: string | undefined; stderr: string[] }

export class ClaudeAgent implements Agent {
  readonly name = 'claude' as const;
  private readonly deps: ClaudeAgentDeps;

  constructor(deps: ClaudeAgentDeps) {
    this.deps = deps;
  }

  async run(options: AgentRunOptions, host: AgentHost): Promise<AgentResult> {
    let attempt = await this.attempt(options, host, options.resume);
    if (options.resume && isMissingConversation(attempt.result) && !options.signal.aborted) {
      // The workspace was recreated (or the id is from elsewhere): start over rather than fail.
      this.deps.log.warn({ resume: options.resume }, 'the conversation to resume is not on this workspace; starting a new one');
      host.event({ type: 'progress', text: 'Starting a new conversation (the earlier one is not on this workspace)' });
      attempt = await this.attempt(options, host, undefined);
    }
    return toResult(attempt.result, attempt.failure, attempt.stderr);
  }

  private async attempt(options: AgentRunOptions, host: AgentHost, resume: string | undefined): Promise<Attempt> {
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
      if (autoAllowed(toolName)) return { behavior: 'allow', updatedInput: toolInput };
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

    let result: SDKResultMessage | undefined;
    let failure: string | undefined;
    try {
      const sdk = await sdkOptions(this.deps, options, host, { resume, abortController, canUseTool, spawn: spawnClaudeCodeProcess });
      for await (const message of (this.deps.queryFn ?? query)({ prompt: input, options: sdk })) {
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
            host.event({ type: 'text', text: textOf(block.content).slice(0, TOOL_OUTPUT_MAX_CHARS) });
            const asked = questions.get(block.tool_use_id);
            if (asked && !answered.has(block.tool_use_id)) void askDirectly(block.tool_use_id, asked);
          }
        } else if (message.type === 'result') {
          result = message;
          if (!isMissingConversation(message)) host.event({ type: 'session', id: message.session_id });
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
    if (stderr.length && (failure || result?.is_error)) this.deps.log.info({ stderr: stderr.join('\n').slice(-2000) }, 'agent stderr');
    return { result, failure, stderr };
  }
}
