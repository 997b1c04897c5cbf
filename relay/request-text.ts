// What the phone sees of an open request (a tool call, questions, a plan, changes, a cost pause, a host
// the agent tries: egress-text.ts) and how to answer it.
import { LIMITS, type Pending } from '../common/session/schema.ts';
import { parseDuration } from '../common/session/display.ts';
import { usd } from '../common/session/budget.ts';
import { planForPhone } from './chat/agent-plan.ts';
import { cutShown, showHidden } from './chat/shown.ts';
import { INLINE_CHARS, toolDetail } from './chat/tool-detail.ts';
import { humanDuration } from './text-format.ts';
import { egressInstructions, egressPending } from './egress-text.ts';

/**
 * The agent's words in one request (a plan, questions with their options), as shown: with the
 * request's own lines, three messages at most (two of 1,600 characters, the last of 1,024 with buttons).
 */
export const REQUEST_TEXT_CHARS = 3000;

const ALLOW_OR_DENY = 'Reply *allow*, *allow always* (for this session) or *deny <reason>*.';

/** The reminder under a request of how to answer it (`hint`: why the last answer was not taken). */
export function instructions(pending: Pending, hint?: string): string {
  if (hint === 'badNumber')
    return 'That number is not one of the options. Reply with a number from the list or your own answer.';
  switch (pending.kind) {
    case 'tool': {
      const request = toolRequest(pending);
      const tool = pending.tool ?? 'tool';
      if (request.cut)
        return (
          `Waiting for your decision on the ${tool} request above (not shown whole): ` +
          '*deny <reason>* or *allow* (this call only).'
        );
      const what = request.inline ?? `the ${tool} request above`;
      return `Waiting for your decision on ${what}: *allow*, *allow always* or *deny <reason>*.`;
    }
    case 'question':
      return 'Waiting for your answer above: reply with a number or your own words (or *reject*).';
    case 'plan':
      return 'Waiting for your decision on the plan above: *approve*, *reject*, or write what to change.';
    case 'changes':
      return 'Waiting for your decision on the changes above: *approve* or *reject* (*diff <file>* shows a file).';
    case 'cost':
      return 'The run is paused for its cost: reply *continue* or *stop*.';
    case 'egress':
      return egressInstructions(pending);
  }
}

/** The request itself, as first sent. */
/** `pullRequest`: the number of the pull request an approval pushes to (a follow-up), else one is opened. */
export function pendingText(pending: Pending, approvalTimeout: string, pullRequest?: number): string {
  const expires = `(expires in ${expiry(approvalTimeout)})`;
  switch (pending.kind) {
    case 'tool':
      return toolPending(pending);
    case 'question':
      return questions(pending);
    case 'plan':
      return (
        `📝 The agent's plan:\n${requestText(planForPhone(pending.summary ?? ''), 'plan')}\n\n` +
        `Reply *approve* to run it, *reject* to drop it, or write what to change. ${expires}`
      );
    case 'changes':
      return (
        `Reply *approve* to ${pullRequest ? `push to pull request #${pullRequest}` : 'open a pull request'} ` +
        `or *reject* to undo. ${expires}`
      );
    case 'cost':
      return (
        `💲 This run has used ${usd(pending.costUsd ?? 0)} so far. Continue? ` +
        `Reply *continue* or *stop* (the changes so far stay). ${expires}`
      );
    case 'egress':
      return egressPending(pending, expires);
  }
}

function questions(pending: Pending): string {
  const asked = (pending.questions ?? [])
    .map((q, i, all) =>
      [
        `❓ ${all.length > 1 ? `(${i + 1}) ` : ''}${q.question}`,
        ...q.options.map((o, n) => `${n + 1}. ${o.label}${o.description ? ` — ${o.description}` : ''}`),
      ].join('\n'),
    )
    .join('\n');
  return [
    requestText(showHidden(asked), 'questions'),
    (pending.questions?.length ?? 0) > 1
      ? 'Reply with one number per question (e.g. "1 2") or your own answer.'
      : 'Reply with a number or your own answer.',
  ].join('\n');
}

/** The agent's words of a request within REQUEST_TEXT_CHARS, with what was left out and what the user can do. */
function requestText(shown: string, what: 'plan' | 'questions'): string {
  const { text: kept, cut } = cutShown(shown, REQUEST_TEXT_CHARS);
  if (!cut) return kept;
  const canDo =
    what === 'plan'
      ? 'write what to change (e.g. "a shorter plan"), or *reject*'
      : 'answer in your own words, or *reject*';
  return `${kept}\n… ${cut} more characters of the ${what} not shown — ${canDo}.`;
}

function expiry(approvalTimeout: string): string {
  return humanDuration(parseDuration(approvalTimeout))
    .replace(/ 0 s$/, '')
    .replace(/ 0 min$/, '');
}

/**
 * The tool request as shown (hidden characters escaped), within LIMITS.toolInputChars, and how much of it
 * was left out.
 */
function toolShown(pending: Pending): { detail: string; cut: number } {
  const shown = cutShown(showHidden(toolDetail(pending)), LIMITS.toolInputChars);
  const cutByRunner = Math.max(0, (pending.inputChars ?? 0) - (pending.input?.length ?? 0));
  return { detail: shown.text, cut: shown.cut + cutByRunner };
}

/**
 * How much of a tool request's input the phone is not shown (the runner's cut, and the cut after escaping).
 */
export const cutChars = (pending: Pending) => toolShown(pending).cut;

/** How a tool request reads: inline when short, else a block; with how much of the input was cut. */
function toolRequest(pending: Pending): { inline?: string; block: string; cut: number } {
  const tool = pending.tool ?? 'a tool';
  const { detail, cut } = toolShown(pending);
  const inline =
    !cut && detail.length <= INLINE_CHARS && !detail.includes('\n')
      ? `\`${tool === 'Bash' ? '' : `${tool}${detail ? ': ' : ''}`}${detail}\``
      : undefined;
  return { inline, block: `${tool}:\n\`\`\`\n${detail}\n\`\`\``, cut };
}

function toolPending(pending: Pending): string {
  const request = toolRequest(pending);
  if (request.inline) return `🔐 The agent wants to run: ${request.inline}\n${ALLOW_OR_DENY}`;
  if (!request.cut) return `🔐 The agent wants to run ${request.block}\n${ALLOW_OR_DENY}`;
  return [
    `🔐 The agent wants to run ${request.block}`,
    `⚠️ CUT: ${request.cut} more characters are not shown. ` +
      'Reply *deny* if unsure (*deny split it up* asks the agent for smaller steps).',
    'Reply *allow* (this call only; it was not shown whole) or *deny <reason>*.',
  ].join('\n');
}
