// The Agent SDK options Tether runs Claude Code with: pinned model, no settings files (a
// repository's .claude/settings.json must not loosen Tether's policy), the runner's own tools as an
// in-process MCP server, and instructions (the image's CLAUDE.md, then the repository's).
import { resolve, sep } from 'node:path';
import type { CanUseTool, HookCallbackMatcher, Options } from '@anthropic-ai/claude-agent-sdk';
import { agentSdk } from './sdk.ts';
import { z } from 'zod/v4';
import { PROGRESS_TOOL, SCREENSHOT_TOOL, type AgentHost, type AgentRunOptions } from './types.ts';

export interface ClaudeSettings {
  env: Record<string, string>;
  model: string;
  claudePath?: string;
  /** The image's CLAUDE.md. */
  instructions?: string;
  /** The workspace volume's root: the trusted folder the repository's CLAUDE.md is read below (workspace-fs). */
  workspace: string;
}

/** The image's instructions, then the repository's CLAUDE.md (already read: repo-instructions.ts) as text. */
export function systemPromptAppend(instructions: string | undefined, repo: string | undefined): string | undefined {
  const own = repo?.trim() ? `# The repository's CLAUDE.md\n\n${repo}` : undefined;
  return [instructions?.trim(), own].filter(Boolean).join('\n\n') || undefined;
}

async function tetherTools(host: AgentHost) {
  const { createSdkMcpServer, tool } = await agentSdk();
  const screenshot = tool(
    'screenshot',
    'Capture a web page (a URL the dev server serves) as a JPEG for the user.',
    {
      url: z.string().describe('http(s) URL to capture'),
      fullPage: z.boolean().optional(),
      caption: z.string().max(200).optional().describe('one line shown under the image'),
    },
    async (args) => ({ content: [{ type: 'text' as const, text: await host.tools[SCREENSHOT_TOOL]!(args) }] }),
  );
  const progress = tool(
    'progress',
    'Tell the user on their phone about a milestone (one short line).',
    {
      text: z.string().min(1).describe('a milestone, under 80 characters, e.g. "Running the unit tests"'),
    },
    async (args) => {
      host.event({ type: 'progress', text: args.text });
      return { content: [{ type: 'text' as const, text: 'Sent to the user.' }] };
    },
  );
  return createSdkMcpServer({ name: 'tether', tools: [screenshot, progress] });
}

/** The runner's progress tool needs no permission: it only talks to the phone. */
export const autoAllowed = (toolName: string) => toolName === PROGRESS_TOOL;

/**
 * Every tool call goes through canUseTool (and so through Tether's policy): Claude Code on its own
 * runs calls it deems harmless (reads anywhere, read-only shell commands) without asking. The
 * exceptions, the plan file Claude Code writes under its config folder in plan mode and the
 * auto-allowed tools, are asked too while `costHeld()` (canUseTool then waits at the cost pause).
 */
export function everyCallAsked(
  claudeConfigDir: string | undefined,
  costHeld: () => boolean = () => false,
): HookCallbackMatcher {
  const plans = claudeConfigDir ? resolve(claudeConfigDir, 'plans') + sep : undefined;
  return {
    hooks: [
      async (input) => {
        const call = input as { tool_name?: string; tool_input?: { file_path?: unknown } };
        const path = call.tool_input?.file_path;
        const planFile =
          plans &&
          (call.tool_name === 'Write' || call.tool_name === 'Edit') &&
          typeof path === 'string' &&
          resolve(path).startsWith(plans);
        if ((planFile || autoAllowed(call.tool_name ?? '')) && !costHeld()) return {};
        return { hookSpecificOutput: { hookEventName: 'PreToolUse' as const, permissionDecision: 'ask' as const } };
      },
    ],
  };
}

export async function sdkOptions(
  settings: ClaudeSettings,
  run: AgentRunOptions,
  host: AgentHost,
  extra: {
    resume: string | undefined;
    abortController: AbortController;
    canUseTool: CanUseTool;
    spawn: Options['spawnClaudeCodeProcess'];
    /** The repository's CLAUDE.md, read once per run. */
    repoInstructions: string | undefined;
  },
): Promise<Options> {
  return {
    cwd: run.cwd,
    model: settings.model,
    resume: extra.resume,
    abortController: extra.abortController,
    canUseTool: extra.canUseTool,
    permissionMode: run.mode === 'plan' ? 'plan' : 'default',
    env: settings.env,
    pathToClaudeCodeExecutable: settings.claudePath,
    spawnClaudeCodeProcess: extra.spawn,
    settingSources: [],
    hooks: { PreToolUse: [everyCallAsked(settings.env.CLAUDE_CONFIG_DIR, () => host.costHeld())] },
    mcpServers: { tether: await tetherTools(host) },
    systemPrompt: {
      type: 'preset',
      preset: 'claude_code',
      append: systemPromptAppend(settings.instructions, extra.repoInstructions),
    },
  };
}
