// Claude Code's `result` message (or its absence) as the runner's AgentResult, in plain words.
import type { SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import type { AgentResult } from './types.ts';

/** What the user reads for an API failure, by status: never Claude Code's raw `API Error: 400 {json}`. */
const API_FAILURES: Array<[(status: number) => boolean, string]> = [
  [(s) => s === 401 || s === 403, 'The Claude API did not accept the API key'],
  [(s) => s === 429, 'The Claude API is rate-limiting this installation'],
  [(s) => s >= 500, 'The Claude API is unavailable right now'],
  [() => true, 'The Claude API refused the request'],
];

/** `API Error: 400 {"type":"error","error":{"message":"…"}}` → "The Claude API refused the request (400): …". */
export function plainApiError(text: string): string {
  const match = /^API Error: (\d{3}) ?([\s\S]*)$/.exec(text.trim());
  if (!match) return text;
  const status = Number(match[1]);
  let detail = match[2]!.trim();
  try {
    const parsed = JSON.parse(detail) as { error?: { message?: unknown }; message?: unknown };
    detail = String(parsed.error?.message ?? parsed.message ?? detail);
  } catch {
    // not JSON: the message as Claude Code gave it
  }
  const [, words] = API_FAILURES.find(([matches]) => matches(status))!;
  return `${words} (${status})${detail ? `: ${detail}` : '.'}`;
}

export const isMissingConversation = (result: SDKResultMessage | undefined) =>
  result?.subtype === 'error_during_execution' && result.errors.some((e) => /No conversation found/i.test(e));

export function toResult(
  result: SDKResultMessage | undefined,
  failure: string | undefined,
  stderr: string[],
): AgentResult {
  const usage = result?.usage as
    | {
        input_tokens?: number;
        output_tokens?: number;
        cache_creation_input_tokens?: number;
        cache_read_input_tokens?: number;
      }
    | undefined;
  const tokens = usage && {
    input: (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0),
    output: usage.output_tokens ?? 0,
  };
  const ok = !failure && result?.subtype === 'success' && !result.is_error;
  // A result already received says more than the error query() throws after it.
  const reported =
    result && (result.subtype === 'success' ? (result.is_error ? result.result : undefined) : result.errors.join('; '));
  const message = ok
    ? undefined
    : plainApiError(reported || failure || stderr.at(-1) || 'Claude Code ended without a result');
  return {
    ok,
    exitCode: ok ? 0 : 1,
    summary: result?.subtype === 'success' && !result.is_error ? result.result : undefined,
    message,
    sessionId: result?.session_id,
    tokens,
  };
}
