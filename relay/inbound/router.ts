// What an incoming text means, given where the phone's sessions stand. Pure: no I/O.
import type { FixRequest, PullRequestRef } from '../../common/session/forge-schema.ts';
import { LIMITS, type Decision, type Pending, type Phase } from '../../common/session/schema.ts';
import { isPullAction } from '../pulls/keys.ts';
import type { PullAction } from '../pulls/types.ts';
import { readCommand, readRepoKeyword } from './command.ts';

export interface PhoneContext {
  /** The session the phone is talking to: the active one, or the newest not yet admitted. */
  current?: { name: string; phase: Phase | undefined; pending?: Pending };
  /** Non-terminal sessions of this phone besides `current`. */
  queued: number;
  /** Short names of the install's repositories (`@name`); none given → any `@name` is unknown. */
  repos?: readonly string[];
}

/**
 * What a new command asks for besides its words (command.ts): plan first, which repository, a new
 * pull request from the base (`new`); a *fix* names its pull request and what it fixes.
 */
export type CommandOptions = {
  mode?: 'plan';
  repo?: string;
  fresh?: true;
  pullRequest?: PullRequestRef;
  fix?: FixRequest;
};

export type DecisionDraft = Omit<Decision, 'by' | 'at'>;

export type Route =
  | { kind: 'empty' }
  | { kind: 'help' }
  | { kind: 'status' }
  | { kind: 'cancel' }
  | { kind: 'diff'; file: string }
  | ({ kind: 'start'; prompt: string } & CommandOptions)
  | ({ kind: 'queue'; prompt: string; position: number } & CommandOptions)
  | { kind: 'repo'; name?: string }
  /** `@name` with no command: how to use it (it does not change the default: that is `repo <name>`) */
  | { kind: 'repoUsage'; name: string }
  | { kind: 'unknownRepo'; name: string }
  | { kind: 'planUsage' }
  /** `new` with no command */
  | { kind: 'newUsage' }
  /** the phone's open pull requests */
  | { kind: 'prs' }
  /** make pull request #number the phone's current one */
  | { kind: 'pr'; number: number }
  /** *fix*, *ignore*, *details*, *merge*: typed (the newest notice of the current PR) or tapped (`noticeId`) */
  | { kind: 'pull'; action: PullAction; noticeId?: string }
  | { kind: 'queueFull' }
  | { kind: 'tooLong' }
  | { kind: 'nothingPending' }
  | { kind: 'decide'; session: string; decision: DecisionDraft }
  | { kind: 'instructions'; pending: Pending; hint?: string }
  | { kind: 'mediaRefused'; media: 'audio' | 'sticker' | 'other' }
  | { kind: 'imageNotNow' }
  /** a tapped button: for a request no longer open (stale), or a payload the relay never wrote (badTap) */
  | { kind: 'stale' }
  | { kind: 'badTap' };

const KEYWORDS = {
  help: ['help', '?'],
  status: ['status', 's'],
  cancel: ['cancel', 'c'],
  approve: ['approve', 'a'],
  reject: ['reject', 'r'],
  allow: ['allow', 'yes', 'y'],
  always: ['allow always', 'always'],
  deny: ['deny', 'no', 'n'],
} as const;
type Keyword = keyof typeof KEYWORDS;

/** Trims, collapses whitespace and drops WhatsApp emphasis (*bold*, _italic_) and trailing punctuation. */
export function normalize(text: string): string {
  const trimmed = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!]+$/, '');
  return trimmed
    .replace(/^[*_~]+(.*?)[*_~]+$/, '$1')
    .replace(/[.!]+$/, '')
    .trim();
}

/** The keyword a text starts with, and what follows it (a reason for deny/reject). */
function keyword(text: string): { word: Keyword; rest: string } | undefined {
  const lower = text.toLowerCase();
  for (const word of ['always', ...Object.keys(KEYWORDS).filter((k) => k !== 'always')] as Keyword[]) {
    for (const form of KEYWORDS[word]) {
      if (lower === form) return { word, rest: '' };
      const takesReason = (word === 'deny' || word === 'reject') && form.length > 1;
      if (takesReason && lower.startsWith(`${form} `)) return { word, rest: text.slice(form.length + 1).trim() };
    }
  }
  return undefined;
}

const withMessage = (draft: DecisionDraft, rest: string): DecisionDraft =>
  rest ? { ...draft, message: rest.slice(0, LIMITS.textChars) } : draft;

function answerQuestion(pending: Pending, text: string): DecisionDraft | 'badNumber' {
  const questions = pending.questions ?? [];
  const numbers = /^\d+([ ,]+\d+)*$/.test(text) ? text.split(/[ ,]+/).map(Number) : undefined;
  const answers: Record<string, string> = {};
  if (numbers) {
    const pick = (q: (typeof questions)[number], n: number) => q.options[n - 1]?.label;
    if (questions.length === 1) {
      const labels = numbers.map((n) => pick(questions[0]!, n));
      if (labels.some((l) => l === undefined) || (labels.length > 1 && !questions[0]!.multiSelect)) return 'badNumber';
      answers[questions[0]!.question] = labels.join(', ');
    } else {
      if (numbers.length !== questions.length) return 'badNumber';
      for (const [i, q] of questions.entries()) {
        const label = pick(q, numbers[i]!);
        if (label === undefined) return 'badNumber';
        answers[q.question] = label;
      }
    }
    return { requestId: pending.id, action: 'answer', answers };
  }
  for (const q of questions) answers[q.question] = text.slice(0, LIMITS.textChars);
  return { requestId: pending.id, action: 'answer', answers, message: text.slice(0, LIMITS.textChars) };
}

/**
 * An allow on an egress request, and how far it reaches: *allow* this connection, *allow session*
 * this Session, *allow always* every later command on the repository (for a tool it is the Session).
 */
function egressScope(text: string, kw: { word: Keyword } | undefined): Decision['scope'] | undefined {
  const lower = text.toLowerCase();
  if (lower === 'allow once' || kw?.word === 'allow' || kw?.word === 'approve') return 'once';
  if (lower === 'allow session') return 'session';
  return kw?.word === 'always' ? 'repository' : undefined;
}

function routePending(
  session: string,
  pending: Pending,
  text: string,
  kw: { word: Keyword; rest: string } | undefined,
): Route {
  const decide = (decision: DecisionDraft | 'badNumber'): Route =>
    decision === 'badNumber'
      ? { kind: 'instructions', pending, hint: 'badNumber' }
      : { kind: 'decide', session, decision };
  const id = pending.id;
  switch (pending.kind) {
    case 'tool':
      if (kw?.word === 'approve' || kw?.word === 'allow')
        return decide({ requestId: id, action: 'allow', scope: 'once' });
      if (kw?.word === 'always') return decide({ requestId: id, action: 'allow', scope: 'session' });
      if (kw?.word === 'reject' || kw?.word === 'deny')
        return decide(withMessage({ requestId: id, action: 'deny' }, kw.rest));
      break;
    case 'egress': {
      const scope = egressScope(text, kw);
      if (scope) return decide({ requestId: id, action: 'allow', scope });
      if (kw?.word === 'reject' || kw?.word === 'deny')
        return decide(withMessage({ requestId: id, action: 'deny' }, kw.rest));
      break;
    }
    case 'changes':
    case 'plan':
      if (kw?.word === 'approve') return decide({ requestId: id, action: 'approve' });
      if (kw?.word === 'reject') return decide(withMessage({ requestId: id, action: 'reject' }, kw.rest));
      // Anything else typed on a plan ("no, …" included) says what to change: the agent plans again
      // (schema.ts, revise).
      if (pending.kind === 'plan' && (!kw || (kw.word === 'deny' && kw.rest)))
        return decide({ requestId: id, action: 'revise', message: text.slice(0, LIMITS.textChars) });
      break;
    case 'cost': {
      const word = text.toLowerCase();
      if (word === 'continue' || kw?.word === 'approve') return decide({ requestId: id, action: 'approve' });
      if (word === 'stop' || kw?.word === 'reject') return decide({ requestId: id, action: 'reject' });
      break;
    }
    case 'question':
      if (kw?.word === 'reject') return decide(withMessage({ requestId: id, action: 'reject' }, kw.rest));
      if (kw?.word !== 'approve') return decide(answerQuestion(pending, text));
      break;
  }
  return { kind: 'instructions', pending };
}

/** `maxQueued`: how many commands the phone may have waiting; one more is refused. */
export function route(body: string, context: PhoneContext, maxQueued: number): Route {
  const text = normalize(body);
  if (!text) return { kind: 'empty' };
  const kw = keyword(text);
  if (kw?.word === 'help') return { kind: 'help' };
  if (kw?.word === 'status') return { kind: 'status' };
  if (/^prs$/i.test(text)) return { kind: 'prs' };
  if (kw?.word === 'cancel') return { kind: 'cancel' };
  const repoKeyword = readRepoKeyword(text);
  if (repoKeyword) return { kind: 'repo', ...repoKeyword };
  const current = context.current;
  const awaiting = current?.phase === 'AwaitingApproval' ? current.pending : undefined;
  // `diff` asks for a page only with nothing open or changes under review; on a plan it is what to
  // change, on a question an answer.
  const diff = /^diff(?: (.+))?$/i.exec(text);
  if (diff && (!awaiting || awaiting.kind === 'changes')) return { kind: 'diff', file: diff[1] ?? '' };
  if (current?.phase === 'AwaitingApproval' && current.pending)
    return routePending(current.name, current.pending, text, kw);
  if (kw) return { kind: 'nothingPending' };
  const pr = /^pr #?(\d{1,9})$/i.exec(text);
  if (pr) return { kind: 'pr', number: Number(pr[1]) };
  const word = text.toLowerCase();
  if (isPullAction(word)) return { kind: 'pull', action: word };
  const command = readCommand(body);
  if (command.repo !== undefined && !context.repos?.includes(command.repo))
    return { kind: 'unknownRepo', name: command.repo };
  if (!command.prompt) {
    if (command.fresh && command.mode !== 'plan' && command.repo === undefined) return { kind: 'newUsage' };
    return command.mode === 'plan' || command.repo === undefined
      ? { kind: 'planUsage' }
      : { kind: 'repoUsage', name: command.repo };
  }
  if (command.prompt.length > LIMITS.promptChars) return { kind: 'tooLong' };
  const options: CommandOptions = {
    ...(command.mode === 'plan' ? { mode: 'plan' } : {}),
    ...(command.repo ? { repo: command.repo } : {}),
    ...(command.fresh ? { fresh: true } : {}),
  };
  return commandRoute(command.prompt, options, context, maxQueued);
}

/** A command started now, or queued behind the phone's others (or refused: the queue is full). */
export function commandRoute(prompt: string, options: CommandOptions, context: PhoneContext, maxQueued: number): Route {
  const busy = context.current !== undefined || context.queued > 0;
  if (!busy) return { kind: 'start', prompt, ...options };
  if (context.queued >= maxQueued) return { kind: 'queueFull' };
  return { kind: 'queue', prompt, position: context.queued + (context.current ? 2 : 1), ...options };
}
