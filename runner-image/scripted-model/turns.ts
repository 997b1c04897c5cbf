// Turn planning: which model turn answers a request, given the scenario and the conversation so
// far. Stateless except for one-time errors: where the scenario stands is read from the tool calls
// already in the conversation (their ids carry the step), so retries and resume replay correctly.
import { randomBytes } from 'node:crypto';
import { isAbsolute, join } from 'node:path';
import { PROGRESS_TOOL } from '../agents/types.ts';
import { plainResult, type Conversation, type ToolCall } from './conversation.ts';
import { planText, type Step } from './scenario.ts';
import { revisionWords } from '../plan-revision.ts';

export interface ToolUse {
  id: string;
  name: string;
  json: string;
}

export type Reply =
  | { kind: 'turn'; delayMs: number; text?: string; tool?: ToolUse }
  | { kind: 'error'; delayMs: number; status: number; type: string; message: string };

/** What a call of ours was for: `do` the step, `read` before writing, write `again`, `plan`, `exit`. */
type Phase = 'do' | 'read' | 'again' | 'plan' | 'exit';
const ID = /^toolu_sm_(do|read|again|plan|exit)_(\d+)_/;
/** Claude Code's result for a call whose process died before it was recorded, as a resumed conversation holds it. */
const INTERRUPTED = '[Tool call interrupted';

const toolUse = (phase: Phase, step: number, name: string, input: unknown): ToolUse => ({
  id: `toolu_sm_${phase}_${step}_${randomBytes(6).toString('hex')}`,
  name,
  json: typeof input === 'string' ? input : JSON.stringify(input),
});

const ours = (call: ToolCall | undefined) => {
  const m = call && ID.exec(call.id);
  return m ? { phase: m[1] as Phase, step: Number(m[2]) } : undefined;
};

/** Anthropic's retryable statuses: Claude Code retries these, and the scripted error happens once. */
const RETRYABLE = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};
const errorType = (status: number) => ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');

export interface TurnContext {
  steps: Step[];
  conversation: Conversation;
  /** Remembers one-time errors already given (key → served). */
  served: Set<string>;
  /** Identifies this conversation and prompt for `served`. */
  key: string;
}

export function nextTurn(context: TurnContext): Reply {
  const { steps, conversation } = context;
  const last = conversation.calls.at(-1);
  const at = ours(last);
  if (conversation.planMode) return planTurn(steps, conversation, at?.phase, last);
  if (
    at?.phase === 'do' &&
    last!.name === 'Write' &&
    last!.result?.error &&
    /has not been read yet/i.test(last!.result.text)
  ) {
    return {
      kind: 'turn',
      delayMs: 0,
      tool: toolUse('read', at.step, 'Read', { file_path: (last!.input as { file_path?: string }).file_path }),
    };
  }
  if (at?.phase === 'read') {
    const write = conversation.calls.findLast((c) => ours(c)?.phase === 'do' && ours(c)?.step === at.step);
    return { kind: 'turn', delayMs: 0, tool: toolUse('again', at.step, 'Write', write?.input ?? {}) };
  }
  // Resumed after its runner was lost mid-call (a continue prompt follows it): the step is done again.
  if (at?.phase === 'do' && last!.result?.text.startsWith(INTERRUPTED)) return walk(context, at.step);
  const from = at && at.phase !== 'plan' && at.phase !== 'exit' ? at.step + 1 : 0;
  return walk(context, from);
}

/** Plans proposed again after a revision before the model gives up. */
const MAX_REVISIONS = 5;

/**
 * Plan mode: write the plan file, then ExitPlanMode. A refusal carrying the user's words
 * (plan-revision.ts) makes the model plan again: the scenario's next `plan:` step, else the last
 * plan with those words as a further step. Any other refusal ends the turn.
 */
function planTurn(
  steps: Step[],
  conversation: Conversation,
  phase: Phase | undefined,
  last: ToolCall | undefined,
): Reply {
  const refusals = conversation.calls
    .filter((c) => ours(c)?.phase === 'exit' && c.result?.error)
    .map((c) => c.result!.text);
  const words = refusals.map(revisionWords);
  if (phase === 'exit' && last?.result?.error && (words.at(-1) === undefined || refusals.length > MAX_REVISIONS)) {
    return { kind: 'turn', delayMs: 0, text: `Plan not approved: ${last.result.text}` };
  }
  const plan = revisedPlan(
    steps,
    words.filter((w): w is string => w !== undefined),
  );
  const round = refusals.length;
  if (phase !== 'plan' && conversation.planFile) {
    return {
      kind: 'turn',
      delayMs: 0,
      tool: toolUse('plan', round, 'Write', { file_path: conversation.planFile, content: plan }),
    };
  }
  return {
    kind: 'turn',
    delayMs: 0,
    tool: toolUse('exit', round, 'ExitPlanMode', conversation.planFile ? {} : { plan }),
  };
}

/**
 * The plan after these revisions: the scenario's own next `plan:` step, else one more step (numbered or bullet, as the
 * plan's) per revision.
 */
function revisedPlan(steps: Step[], revisions: string[]): string {
  const own = steps.flatMap((s) => (s.kind === 'plan' ? [s.text] : []));
  if (own[revisions.length] !== undefined) return own[revisions.length]!;
  let plan = own.at(-1) ?? planText(steps);
  for (const [i, words] of revisions.entries()) {
    if (i < own.length - 1) continue;
    const items = plan.split('\n').filter((l) => /^(\d+\.|[-*+]) /.test(l));
    const bullet = /^[-*+] /.test(items.at(-1) ?? '') ? '-' : `${items.length + 1}.`;
    plan = `${plan}\n${bullet} ${words.replace(/\s+/g, ' ')}`;
  }
  return plan;
}

/** From step `from`: texts and sleeps gather until a step that needs a turn (or an error) of its own. */
function walk(context: TurnContext, from: number): Reply {
  const { steps, conversation } = context;
  const texts: string[] = [];
  let delayMs = 0;
  for (let i = from; i < steps.length; i++) {
    const step = steps[i]!;
    const reply = (tool: ToolUse): Reply => ({
      kind: 'turn',
      delayMs,
      tool,
      ...(texts.length ? { text: texts.join('\n\n') } : {}),
    });
    switch (step.kind) {
      case 'say':
        texts.push(step.text);
        break;
      case 'sleep':
        delayMs += step.ms;
        break;
      case 'plan':
        break; // the plan of plan mode; nothing to do when running
      case 'progress':
        return reply(toolUse('do', i, PROGRESS_TOOL, { text: step.text }));
      case 'write':
        return reply(
          toolUse('do', i, 'Write', { file_path: absolute(conversation.cwd, step.path), content: step.content }),
        );
      case 'tool':
        return reply(toolUse('do', i, step.tool, step.json));
      case 'ask':
        return reply(toolUse('do', i, 'AskUserQuestion', { questions: [question(step.question, step.options)] }));
      case 'fail':
        return { kind: 'error', delayMs, status: 400, type: errorType(400), message: step.message };
      case 'error': {
        const key = `${context.key}:${conversation.promptIndex}:${i}`;
        if (context.served.has(key)) {
          delayMs = 0; // slept before the error already
          break;
        }
        if (RETRYABLE(step.status)) context.served.add(key);
        return {
          kind: 'error',
          delayMs,
          status: step.status,
          type: errorType(step.status),
          message: `scripted error ${step.status}`,
        };
      }
    }
  }
  return { kind: 'turn', delayMs, text: texts.join('\n\n') || summary(conversation.calls) };
}

const absolute = (cwd: string | undefined, path: string) => (isAbsolute(path) || !cwd ? path : join(cwd, path));

const question = (text: string, options: string[]) => ({
  question: text,
  header: 'Question',
  multiSelect: false,
  options: options.map((label) => ({ label, description: '' })),
});

/** The closing words when the scenario has no `say:` at its end: answers and what did not run. */
function summary(calls: ToolCall[]): string {
  const lastOfStep = new Map<string, ToolCall>();
  for (const call of calls) {
    const at = ours(call);
    if (at?.phase === 'do' || at?.phase === 'again') lastOfStep.set(String(at.step), call);
  }
  const lines = [...lastOfStep.values()].flatMap((call) => {
    if (!call.result) return [];
    if (call.result.error) return [`${call.name} did not run: ${plainResult(call.result.text).split('\n')[0]}`];
    if (call.name !== 'AskUserQuestion') return [];
    return [...call.result.text.matchAll(/"([^"]*)"="([^"]*)"/g)].map(([, q, a]) => `${q} → ${a}`);
  });
  return lines.join('\n') || 'Done.';
}
