// A tool call's input as the phone reads it (a tool request, or the call running when the agent
// tried a host). Not yet escaped: callers show hidden characters (shown.ts). Pure.
import type { Pending } from '../../common/session/schema.ts';

/** Longer than this, or on several lines, a tool request is shown as a block of its own. */
export const INLINE_CHARS = 300;

/**
 * Bash: its command. Other tools: compact JSON, or one field a line when long (multi-line values last).
 */
export function toolDetail(pending: Pending): string {
  let input: unknown;
  try {
    input = pending.input ? JSON.parse(pending.input) : undefined;
  } catch {
    return pending.input ?? ''; // cut JSON: shown as text
  }
  if (!input || typeof input !== 'object' || Array.isArray(input))
    return input === undefined ? '' : JSON.stringify(input);
  const fields = input as Record<string, unknown>;
  if (pending.tool === 'Bash' && typeof fields.command === 'string') return fields.command;
  const compact = JSON.stringify(fields);
  const multiLine = (v: unknown) => typeof v === 'string' && v.includes('\n');
  if (compact.length <= INLINE_CHARS && !Object.values(fields).some(multiLine)) return compact;
  const entries = Object.entries(fields).sort(([, a], [, b]) => Number(multiLine(a)) - Number(multiLine(b)));
  return entries
    .map(([key, v]) =>
      multiLine(v) ? `${key}:\n${v as string}` : `${key}: ${typeof v === 'string' ? v : JSON.stringify(v)}`,
    )
    .join('\n');
}
