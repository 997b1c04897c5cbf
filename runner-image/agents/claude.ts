// The agent: Claude Code through @anthropic-ai/claude-agent-sdk query() with canUseTool, resume,
// abortController and cwd. Claude Code's process tree is stopped whole (process-group.ts);
// without an API key it talks to the scripted model (scripted-model/), never to anything else.
import { spawn, type ChildProcess } from 'node:child_process';
import { query, type Options, type SDKMessage, type SDKResultMessage, type SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import { ClaudeConversation } from './claude-conversation.ts';
import { sdkOptions, type ClaudeSettings } from './claude-options.ts';
import { isMissingConversation, toResult } from './claude-result.ts';
import { onLines } from './lines.ts';
import { killTree, trackTree } from './process-group.ts';
import type { Agent, AgentHost, AgentResult, AgentRunOptions } from './types.ts';

export type QueryFn = (params: { prompt: AsyncIterable<SDKUserMessage>; options: Options }) => AsyncIterable<SDKMessage>;

export interface ClaudeAgentDeps extends ClaudeSettings {
  log: Logger;
  /** The SDK's query(); unit tests pass recorded messages instead. */
  queryFn?: QueryFn;
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
    const conversation = new ClaudeConversation(host, options.signal, options.prompt);
    const abortController = new AbortController();
    const children: ChildProcess[] = [];
    const stderr: string[] = [];
    const stop = () => {
      abortController.abort();
      for (const child of children) void killTree(child);
    };
    options.signal.addEventListener('abort', stop, { once: true });
    const spawnClaudeCodeProcess: Options['spawnClaudeCodeProcess'] = (spawnOptions) => {
      const child = spawn(spawnOptions.command, spawnOptions.args, { cwd: spawnOptions.cwd, env: spawnOptions.env, stdio: ['pipe', 'pipe', 'pipe'] });
      this.deps.log.info({ pid: child.pid, agent: 'claude' }, 'agent started');
      trackTree(child);
      children.push(child);
      void onLines(child.stderr, (line) => {
        stderr.push(line);
        if (stderr.length > 20) stderr.shift();
      }).catch(() => undefined);
      return child;
    };

    let failure: string | undefined;
    try {
      const sdk = await sdkOptions(this.deps, options, host, { resume, abortController, canUseTool: conversation.canUseTool, spawn: spawnClaudeCodeProcess });
      for await (const message of (this.deps.queryFn ?? query)({ prompt: conversation.input, options: sdk })) conversation.handle(message);
    } catch (error) {
      failure = options.signal.aborted ? 'stopped' : `Claude Code stopped: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      options.signal.removeEventListener('abort', stop);
      conversation.input.close();
      await Promise.all(children.map((c) => killTree(c)));
    }
    const { result } = conversation;
    if (stderr.length && (failure || result?.is_error)) this.deps.log.info({ stderr: stderr.join('\n').slice(-2000) }, 'agent stderr');
    return { result, failure, stderr };
  }
}
