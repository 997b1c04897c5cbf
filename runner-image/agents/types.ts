// The event model between the runner and the agent (Claude Code through the Agent SDK, agents/claude.ts).
import type { Usage } from '../model/cost-meter.ts';

export interface ToolRequest {
  /** Unique per call (the SDK's toolUseID). */
  id: string;
  tool: string;
  input: Record<string, unknown>;
}

/** Same shape as the Agent SDK's PermissionResult, so the claude adapter passes it through. */
export type ToolDecision =
  | { behavior: 'allow'; updatedInput?: Record<string, unknown>; updatedPermissions?: unknown[] }
  | { behavior: 'deny'; message: string; interrupt?: boolean };

export type AgentEvent =
  | { type: 'text'; text: string } //                  assistant text or tool output; scanned for ::progress::
  | { type: 'progress'; text: string } //              an explicit milestone (the progress tool)
  | { type: 'tool_use'; tool: string; input: unknown; id?: string } // a tool call the agent made
  | { type: 'tool_done'; id: string } //               that call's result came back
  | { type: 'session'; id: string } //                 the agent's own session id (for resume)
  // one model response's tokens as it began (model/cost-meter.ts)
  | { type: 'usage'; id: string; model: string; usage: Usage }
  | { type: 'turn-usage'; usage: Usage }; // a finished turn's tokens, final output counts included

export interface AgentHost {
  /** Permission for one tool call; questions (AskUserQuestion) and plans (ExitPlanMode) too. */
  canUseTool(request: ToolRequest, signal: AbortSignal): Promise<ToolDecision>;
  event(event: AgentEvent): void;
  /** Before every tool call, auto-allowed ones included: a decision while the run is held at its cost pause. */
  costGate(): Promise<ToolDecision | undefined>;
  /** Whether costGate would hold a call now (a pause open or due). */
  costHeld(): boolean;
  /** Tools the runner itself provides (the screenshot tool); name → handler returning text. */
  tools: Record<string, (input: Record<string, unknown>) => Promise<string>>;
}

/** A picture given with the prompt, as the Messages API takes it. */
export interface AgentImage {
  mediaType: 'image/jpeg' | 'image/png' | 'image/webp' | 'image/gif';
  /** base64 */
  data: string;
}

export interface AgentRunOptions {
  prompt: string;
  /** pictures the user sent with the prompt: image inputs of the first user message */
  images?: AgentImage[];
  cwd: string;
  mode: 'run' | 'plan';
  resume?: string;
  /** Aborting stops the agent and kills its whole process group. */
  signal: AbortSignal;
}

export interface AgentResult {
  ok: boolean;
  summary?: string;
  message?: string;
  sessionId?: string;
  tokens?: { input: number; output: number };
  exitCode: number;
}

export interface Agent {
  readonly name: 'claude';
  run(options: AgentRunOptions, host: AgentHost): Promise<AgentResult>;
}

/** The runner's own tools as the agent sees them (MCP naming, as Claude Code shows SDK tools). */
export const SCREENSHOT_TOOL = 'mcp__tether__screenshot';
export const PROGRESS_TOOL = 'mcp__tether__progress';
