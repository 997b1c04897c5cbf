// A spare Claude Code: started (the SDK's prewarm) while the runner writes Working and prepares the
// workspace, so its process start, tools, in-process MCP server and hooks are ready when the
// checkout is; claimed then with the Session's folder, mode and instructions. It does nothing
// before the claim: the folder, CLAUDE.md and git context are read at the claim.
import type { CanUseTool, Query, SDKUserMessage, SpareProcess } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import { permissionMode, processOptions, systemPromptAppend, type ClaudeSettings } from './claude-options.ts';
import type { ClaudeProcesses } from './claude-processes.ts';
import { agentSdk } from './sdk.ts';
import type { AgentEvent, AgentHost, AgentRunOptions, ToolDecision, ToolRequest } from './types.ts';

/** The one claim refusal after which the prompt runs anyway (only the model option was not taken). */
const RUNS_ANYWAY = 'option_not_applied';

/** The host a spare is started with: the run's own host, once the claim names it. */
class ClaimedHost implements AgentHost {
  current: AgentHost | undefined;

  private get host(): AgentHost {
    if (!this.current) throw new Error('the spare Claude Code acted before it was claimed');
    return this.current;
  }

  get tools(): AgentHost['tools'] {
    return this.host.tools;
  }

  canUseTool(request: ToolRequest, signal: AbortSignal): Promise<ToolDecision> {
    return this.host.canUseTool(request, signal);
  }

  event(event: AgentEvent): void {
    this.host.event(event);
  }

  costGate(): Promise<ToolDecision | undefined> {
    return this.host.costGate();
  }

  costHeld(): boolean {
    return this.current?.costHeld() ?? false;
  }
}

export interface ClaimParams {
  run: AgentRunOptions;
  host: AgentHost;
  canUseTool: CanUseTool;
  prompt: AsyncIterable<SDKUserMessage>;
}

export class ClaudeSpare {
  readonly processes: ClaudeProcesses;
  readonly abortController = new AbortController();
  private readonly host = new ClaimedHost();
  private canUseTool: CanUseTool | undefined;
  private readonly parked: Promise<SpareProcess | undefined>;
  private readonly settings: ClaudeSettings;
  private readonly log: Logger;

  constructor(settings: ClaudeSettings, processes: ClaudeProcesses, parkingDir: string, log: Logger) {
    this.settings = settings;
    this.processes = processes;
    this.log = log;
    this.parked = this.start(parkingDir).catch((error: unknown) => {
      log.warn({ err: error }, 'the spare Claude Code did not start; the run starts one');
      return undefined;
    });
  }

  private async start(parkingDir: string): Promise<SpareProcess> {
    const canUseTool: CanUseTool = (name, input, options) => {
      if (!this.canUseTool) throw new Error('the spare Claude Code asked for a tool before it was claimed');
      return this.canUseTool(name, input, options);
    };
    const options = await processOptions(this.settings, this.host, { abortController: this.abortController, canUseTool, spawn: this.processes.spawn });
    const { prewarm } = await agentSdk();
    return prewarm({ options: { ...options, cwd: parkingDir, systemPrompt: { type: 'preset', preset: 'claude_code' } } });
  }

  /** The run's messages from the spare; undefined when it cannot serve the run (then it is gone: start one). */
  async claim(params: ClaimParams): Promise<Query | undefined> {
    const spare = await this.parked;
    if (!spare) return undefined;
    this.host.current = params.host;
    this.canUseTool = params.canUseTool;
    const append = await systemPromptAppend(this.settings.instructions, params.run.cwd);
    const options = { cwd: params.run.cwd, model: this.settings.model, permissionMode: permissionMode(params.run), ...(append ? { appendSystemPrompt: append } : {}) };
    try {
      const messages = spare.claim({ prompt: params.prompt, options });
      const claimed = await spare.claimed.catch((error: unknown) => {
        if (!(error instanceof Error && error.message.startsWith(RUNS_ANYWAY))) throw error;
        this.log.warn({ err: error }, 'the spare Claude Code runs without an option it was claimed with');
        return undefined;
      });
      this.log.info({ parkedMs: claimed?.parkedMs }, 'agent claimed');
      return messages;
    } catch (error) {
      this.log.warn({ err: error }, 'the spare Claude Code could not be claimed; the run starts one');
      spare.close();
      return undefined;
    }
  }

  close(): void {
    void this.parked.then((spare) => spare?.close());
  }
}
