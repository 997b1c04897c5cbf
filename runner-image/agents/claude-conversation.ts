// One query()'s side of the conversation with Claude Code: the streaming user input, permission
// requests passed to the host, Claude Code's messages turned into host events, and the
// claude-code #50728 follow-up (a question resolved with empty answers without asking us).
import type { CanUseTool, PermissionResult, SDKMessage, SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import { autoAllowed } from './claude-options.ts';
import { isMissingConversation } from './claude-result.ts';
import type { AgentHost, AgentImage, ToolDecision } from './types.ts';
import { UserInput, userMessage } from './user-input.ts';

/** Claude Code already keeps big outputs in a file and shows a preview; this bounds the rest. */
const TOOL_OUTPUT_MAX_CHARS = 64 * 1024;

type Block = {
  type: string;
  text?: unknown;
  name?: unknown;
  id?: unknown;
  input?: unknown;
  tool_use_id?: unknown;
  content?: unknown;
};

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((c: Block) => (typeof c?.text === 'string' ? c.text : '')).join('\n')
      : '';

/** An allow for AskUserQuestion must carry real answers (claude-code #50728): otherwise deny. */
export function checkAnswers(toolName: string, decision: ToolDecision): ToolDecision {
  if (toolName !== 'AskUserQuestion' || decision.behavior !== 'allow') return decision;
  const answers = decision.updatedInput?.answers;
  const usable =
    answers && typeof answers === 'object' && Object.values(answers).some((a) => typeof a === 'string' && a.trim());
  return usable
    ? decision
    : { behavior: 'deny', message: 'The user gave no answer. Do not assume one: ask again or stop.' };
}

export class ClaudeConversation {
  readonly input = new UserInput();
  result: SDKResultMessage | undefined;
  private readonly host: AgentHost;
  private readonly signal: AbortSignal;
  private readonly answered = new Set<string>();
  private readonly questions = new Map<string, Record<string, unknown>>();
  private followUps = 0;
  private pushedSinceResult = 0;

  constructor(host: AgentHost, signal: AbortSignal, prompt: string, images: readonly AgentImage[] = []) {
    this.host = host;
    this.signal = signal;
    this.input.push(userMessage(prompt, images));
  }

  readonly canUseTool: CanUseTool = async (toolName, toolInput, { signal, toolUseID }) => {
    this.answered.add(toolUseID);
    const paused = await this.host.costGate();
    if (paused) return paused as PermissionResult;
    if (autoAllowed(toolName)) return { behavior: 'allow', updatedInput: toolInput };
    const decision = checkAnswers(
      toolName,
      await this.host.canUseTool({ id: toolUseID, tool: toolName, input: toolInput }, signal),
    );
    return decision as PermissionResult;
  };

  handle(message: SDKMessage): void {
    const { host } = this;
    if (message.type === 'system' && message.subtype === 'init') {
      host.event({ type: 'session', id: message.session_id });
    } else if (message.type === 'assistant') {
      const response = message.message as { id?: unknown; model?: unknown; usage?: unknown };
      if (typeof response.id === 'string' && response.usage && typeof response.usage === 'object') {
        host.event({ type: 'usage', id: response.id, model: String(response.model ?? ''), usage: response.usage });
      }
      for (const block of message.message.content as Block[]) {
        if (block.type === 'text' && typeof block.text === 'string') host.event({ type: 'text', text: block.text });
        if (block.type !== 'tool_use' || typeof block.name !== 'string') continue;
        const id = typeof block.id === 'string' ? { id: block.id } : {};
        host.event({ type: 'tool_use', tool: block.name, input: block.input, ...id });
        if (block.name === 'AskUserQuestion' && typeof block.id === 'string')
          this.questions.set(block.id, (block.input ?? {}) as Record<string, unknown>);
      }
    } else if (message.type === 'user' && Array.isArray(message.message.content)) {
      for (const block of message.message.content as Block[]) {
        if (block.type !== 'tool_result' || typeof block.tool_use_id !== 'string') continue;
        host.event({ type: 'tool_done', id: block.tool_use_id });
        host.event({ type: 'text', text: textOf(block.content).slice(0, TOOL_OUTPUT_MAX_CHARS) });
        const asked = this.questions.get(block.tool_use_id);
        if (asked && !this.answered.has(block.tool_use_id)) void this.askDirectly(block.tool_use_id, asked);
      }
    } else if (message.type === 'result') {
      this.result = message;
      host.event({ type: 'turn-usage', usage: message.usage });
      if (!isMissingConversation(message)) host.event({ type: 'session', id: message.session_id });
      if (this.followUps === 0 && this.pushedSinceResult === 0) this.input.close();
      this.pushedSinceResult = 0;
    }
  }

  /**
   * #50728: ask the user ourselves and send the answer as the next user turn, so the agent never proceeds on an
   * invented answer.
   */
  private async askDirectly(toolUseId: string, questionInput: Record<string, unknown>): Promise<void> {
    this.followUps += 1;
    const decision = checkAnswers(
      'AskUserQuestion',
      await this.host.canUseTool(
        { id: `${toolUseId}-direct`, tool: 'AskUserQuestion', input: questionInput },
        this.signal,
      ),
    );
    const answers =
      decision.behavior === 'allow' ? (decision.updatedInput?.answers as Record<string, string>) : undefined;
    const text = answers
      ? `Your question tool returned no answers because of a bug; my answers are:\n${Object.entries(answers)
          .map(([q, a]) => `- ${q} → ${a}`)
          .join('\n')}`
      : 'Your question tool returned no answers because of a bug, and I did not answer: ' +
        `${decision.behavior === 'deny' ? decision.message : ''}. Do not assume an answer.`;
    this.pushedSinceResult += 1;
    this.followUps -= 1;
    this.input.push(userMessage(text));
  }
}
