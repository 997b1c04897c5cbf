// Reads a Messages API request the way the scripted model needs it: the user's prompt, the tool
// calls made since (with their results), plan mode and its plan file. Tolerant: Claude Code sends
// many fields and blocks a strict reader would reject; anything unknown is ignored.
import { isContinuePrompt } from '../continue-prompt.ts';

export interface MessagesRequest {
  model?: string;
  system?: unknown;
  messages?: Message[];
  tools?: Array<{ name?: string }>;
  output_config?: { format?: { schema?: { properties?: Record<string, unknown> } } };
  metadata?: { user_id?: string };
}
interface Message {
  role?: string;
  content?: string | Block[];
}
interface Block {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | Block[];
  is_error?: boolean;
}

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
  result?: { error: boolean; text: string };
}

export interface Conversation {
  /** The human text of the latest user prompt (system reminders left out). */
  prompt: string;
  /** Index of that prompt in messages[]: a resumed conversation has earlier prompts. */
  promptIndex: number;
  /** Claude Code's working directory, from its environment reminder. */
  cwd?: string;
  planMode: boolean;
  planFile?: string;
  /** Tool calls since the prompt, in order, with their results when they came back. */
  calls: ToolCall[];
}

const REMINDER = '<system-reminder>';
const blocksOf = (content: Message['content']): Block[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];

export const textOf = (content: string | Block[] | undefined): string =>
  blocksOf(content)
    .map((b) => (typeof b.text === 'string' ? b.text : ''))
    .join('\n');

/** A tool result's words without Claude Code's tags and reminders. */
export const plainResult = (text: string) =>
  text
    .replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '')
    .replace(/<\/?tool_use_error>/g, '')
    .trim();

const humanText = (message: Message) =>
  blocksOf(message.content)
    .filter((b) => b.type === 'text' && typeof b.text === 'string' && !b.text.trimStart().startsWith(REMINDER))
    .map((b) => b.text!)
    .join('\n')
    .trim();

/** Title generation and similar calls: not a turn of the agent's conversation. */
export function isSideRequest(body: MessagesRequest): boolean {
  const tools = new Set((body.tools ?? []).map((t) => t.name));
  return !!body.output_config?.format || !(tools.has('Write') && tools.has('Bash'));
}

export function readConversation(body: MessagesRequest): Conversation {
  const messages = body.messages ?? [];
  let promptIndex = -1;
  // A replacement runner's "continue" turn is no new prompt: the scenario goes on from where it stopped.
  messages.forEach((m, i) => {
    const text = m.role === 'user' ? humanText(m) : '';
    if (text && (!isContinuePrompt(text) || promptIndex < 0)) promptIndex = i;
  });
  const since = messages.slice(Math.max(promptIndex, 0));
  const texts = since
    .filter((m) => m.role === 'user')
    .flatMap((m) => blocksOf(m.content).map((b) => textOf(b.type === 'tool_result' ? b.content : [b])));
  const calls: ToolCall[] = [];
  for (const message of since) {
    for (const block of blocksOf(message.content)) {
      if (block.type === 'tool_use' && typeof block.id === 'string')
        calls.push({ id: block.id, name: String(block.name), input: block.input });
      if (block.type === 'tool_result') {
        const call = calls.find((c) => c.id === block.tool_use_id);
        if (call) call.result = { error: block.is_error === true, text: plainResult(textOf(block.content)) };
      }
    }
  }
  const allText = messages
    .filter((m) => m.role === 'user')
    .map((m) => textOf(m.content))
    .join('\n');
  const exited = calls.some((c) => c.name === 'ExitPlanMode' && c.result && !c.result.error);
  return {
    prompt: promptIndex >= 0 ? humanText(messages[promptIndex]!) : '',
    promptIndex,
    cwd: [...allText.matchAll(/Primary working directory: (\S+)/g)].at(-1)?.[1],
    planMode: !exited && texts.some((t) => t.includes('Plan mode is active')),
    planFile: texts.map((t) => /Plan File Info:[\s\S]*?(\/\S+?\.md)\b/.exec(t)?.[1]).find(Boolean),
    calls,
  };
}

/** Claude Code's id for this conversation (kept across resume), for one-time errors. */
export function conversationKey(body: MessagesRequest, header: string | undefined): string {
  if (header) return header;
  try {
    return String((JSON.parse(body.metadata?.user_id ?? '{}') as { session_id?: unknown }).session_id ?? 'none');
  } catch {
    return 'none';
  }
}
