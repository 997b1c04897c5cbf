// The agent: Claude Code through @anthropic-ai/claude-agent-sdk query() with canUseTool, resume,
// abortController and cwd. Claude Code runs in the agent container when there is an agent channel
// (claude-processes.ts), else as the runner's child; either way it is stopped whole. Without an API
// key it talks to the scripted model (scripted-model/), never to anything else.
import type { Options, SDKMessage, SDKResultMessage, SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import type { AgentChannel } from '../agent-channel/channel.ts';
import { ClaudeConversation } from './claude-conversation.ts';
import { channelProcesses, localProcesses } from './claude-processes.ts';
import { sdkOptions, type ClaudeSettings } from './claude-options.ts';
import { agentSdk } from './sdk.ts';
import { isMissingConversation, toResult } from './claude-result.ts';
import { readRepoInstructions } from './repo-instructions.ts';
import type { Agent, AgentHost, AgentResult, AgentRunOptions } from './types.ts';

export type QueryFn = (params: {
  prompt: AsyncIterable<SDKUserMessage>;
  options: Options;
}) => AsyncIterable<SDKMessage>;

export interface ClaudeAgentDeps extends ClaudeSettings {
  log: Logger;
  /** The SDK's query(); unit tests pass recorded messages instead. */
  queryFn?: QueryFn;
  /** Set: Claude Code is started in the agent container through it. */
  channel?: AgentChannel;
}

interface Attempt {
  result: SDKResultMessage | undefined;
  failure: string | undefined;
  stderr: string[];
}

export class ClaudeAgent implements Agent {
  readonly name = 'claude' as const;
  private readonly deps: ClaudeAgentDeps;

  constructor(deps: ClaudeAgentDeps) {
    this.deps = deps;
  }

  async run(options: AgentRunOptions, host: AgentHost): Promise<AgentResult> {
    const repoInstructions = await this.repoInstructions(options.cwd, host);
    let attempt = await this.attempt(options, host, options.resume, repoInstructions);
    if (options.resume && isMissingConversation(attempt.result) && !options.signal.aborted) {
      // The workspace was recreated (or the id is from elsewhere): start over rather than fail.
      this.deps.log.warn(
        { resume: options.resume },
        'the conversation to resume is not on this workspace; starting a new one',
      );
      host.event({ type: 'progress', text: 'Starting a new conversation (the earlier one is not on this workspace)' });
      attempt = await this.attempt(options, host, undefined, repoInstructions);
    }
    return toResult(attempt.result, attempt.failure, attempt.stderr);
  }

  /** The repository's CLAUDE.md; one the runner will not read is left out, and the phone is told why. */
  private async repoInstructions(cwd: string, host: AgentHost): Promise<string | undefined> {
    const found = await readRepoInstructions(this.deps.workspace, cwd);
    if (!found || 'text' in found) return found?.text;
    this.deps.log.warn({ why: found.leftOut }, "the repository's CLAUDE.md was left out");
    host.event({ type: 'progress', text: `The repository's CLAUDE.md was left out (${found.leftOut})` });
    return undefined;
  }

  private async attempt(
    options: AgentRunOptions,
    host: AgentHost,
    resume: string | undefined,
    repoInstructions: string | undefined,
  ): Promise<Attempt> {
    const conversation = new ClaudeConversation(host, options.signal, options.prompt, options.images);
    const abortController = new AbortController();
    const processes = this.deps.channel
      ? channelProcesses(this.deps.channel, this.deps.log)
      : localProcesses(this.deps.log);
    const { stderr } = processes;
    const stop = () => {
      abortController.abort();
      void processes.stopAll();
    };
    options.signal.addEventListener('abort', stop, { once: true });

    let failure: string | undefined;
    try {
      const sdk = await sdkOptions(this.deps, options, host, {
        resume,
        abortController,
        canUseTool: conversation.canUseTool,
        spawn: processes.spawn,
        repoInstructions,
      });
      const query = this.deps.queryFn ?? (await agentSdk()).query;
      for await (const message of query({ prompt: conversation.input, options: sdk })) conversation.handle(message);
    } catch (error) {
      failure = options.signal.aborted
        ? 'stopped'
        : `Claude Code stopped: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      options.signal.removeEventListener('abort', stop);
      conversation.input.close();
      await processes.stopAll();
    }
    const { result } = conversation;
    if (stderr.length && (failure || result?.is_error))
      this.deps.log.info({ stderr: stderr.join('\n').slice(-2000) }, 'agent stderr');
    return { result, failure, stderr };
  }
}
