// Every word the phone sees. docs/architecture.md ("What the phone sees") is the guide; keep the shape, improve the words here.
import type { SessionDefaults } from '../common/session/defaults.ts';
import { LIMITS, type Pending, type Result, type Session } from '../common/session/schema.ts';
import { formatDuration, parseDuration, previewPrompt } from '../common/session/display.ts';
import { Reason } from '../common/session/state-machine.ts';
import { LABEL_REPO } from '../common/session/names.ts';
import { planForPhone } from './chat/agent-plan.ts';
import { cutShown, showHidden } from './chat/shown.ts';
import { usd } from '../common/session/budget.ts';

/** Short handle the user sees: the random tail of the Session name ("7f3a"). */
export const shortId = (name: string) => name.slice(name.lastIndexOf('-') + 1);

/** Enough names for a 1,600-character message. */
const DIFF_NAMES_SHOWN = 12;
/**
 * The agent's words in one request (a plan, questions with their options), as shown: with the
 * request's own lines, three messages at most (two of 1,600 characters, the last of 1,024 with buttons).
 */
export const REQUEST_TEXT_CHARS = 3000;

const humanDuration = (ms: number) =>
  formatDuration(ms)
    .replace(/(\d+)h/, '$1 h ')
    .replace(/(\d+)m/, '$1 min ')
    .replace(/(\d+)s$/, '$1 s')
    .trim();

export const text = {
  /** `repos`: the install's repositories and the phone's default, when it has more than one. */
  help: (repos?: string) =>
    [
      'Send a command in plain words, e.g. "fix the failing login test".',
      'Plan first: *plan: <command>* — the agent sends its plan; *approve* runs it, *reject* drops it, or write what to change.',
      'While it runs: *status* (s) · *cancel* (c).',
      'When asked: tap a button under the request, or reply *approve* (a) · *reject* (r) · *allow* · *allow always* · *deny <reason>* · a number or your own answer.',
      "Reviewing changes: *diff <file>* shows one file's pages · *diff* lists the changed files.",
      'A picture with a caption: the caption is the command, and the agent sees the picture.',
      "A run paused for its cost: *continue* · *stop*. *status* shows today's spend.",
      ...(repos
        ? [
            repos,
            'Repositories: *@name <command>* for one command · *repo <name>* sets your default · *repo* lists them.',
          ]
        : []),
    ].join('\n'),
  repoUsage: (name: string) =>
    `*@${name}* goes in front of a command for that repository, e.g. "@${name} fix the navbar". Reply *repo ${name}* to make it your default.`,
  planUsage: () =>
    'Send *plan: <command>* to see the agent\'s plan before it changes anything, e.g. "plan: add a dark-mode toggle".',
  repoChosen: (name: string, count: number) =>
    count === 1
      ? `This install has one repository: *${name}*.`
      : `Your new commands now work on *${name}*. Start a command with *@name* to use another one for that command.`,
  /** `unknown`: a name the phone asked for that is not on the list (already made safe to show). */
  repoList: (names: string[], current: string, unknown?: string) =>
    [
      ...(unknown !== undefined
        ? [`There is no repository named "${unknown}". The repositories here:`]
        : ['The repositories here:']),
      ...names.map((n) => `• ${n}${n === current ? ' (your default)' : ''}`),
      names.length > 1 ? 'Reply *repo <name>* to change your default, or start a command with *@name*.' : '',
    ]
      .filter(Boolean)
      .join('\n'),
  repoSummary: (names: string[], current: string) =>
    `Repositories: ${names.map((n) => (n === current ? `*${n}* (your default)` : n)).join(', ')}`,
  noDiff: () => 'No changes are waiting for your review. *diff <file>* shows a changed file while they are.',
  diffLimit: (max: number) => `That is the ${max}-file limit for this review. Reply *approve* or *reject*.`,
  diffNotDrawn: (file: string) => `Could not draw ${file}. The list of changes above still holds.`,
  /** The changed files, when `asked` is none of them (or empty). */
  diffFiles(asked: string, files: NonNullable<Result['diffFiles']>): string {
    const shown = files.names.slice(0, DIFF_NAMES_SHOWN);
    const more = files.total - shown.length;
    return [
      asked ? `No changed file matches "${previewPrompt(asked, 60)}". The changed files:` : 'The changed files:',
      ...shown.map((n) => `• ${previewPrompt(showHidden(n), 100)}`),
      ...(more > 0 ? [`…and ${more} more.`] : []),
      'Reply *diff <file>* to see one.',
    ].join('\n');
  },
  /** Under the last review page, when some files are on none of them. */
  diffMoreFiles: (hidden: number) => `${hidden} more file${hidden === 1 ? '' : 's'} not shown — reply *diff <file>*`,
  empty: () => 'Send a command in words, e.g. "add a dark-mode toggle". Reply *help* for more.',
  tooLong: (max: number) => `That command is too long (over ${max} characters). Please shorten it and send it again.`,
  started: (name: string, how: { plan?: boolean; repo?: string } = {}) =>
    `On it (session ${shortId(name)})${how.repo ? ` in *${how.repo}*` : ''}.${how.plan ? ' The plan comes first, for your approval.' : ''} Reply *cancel* to stop.`,
  startedFromQueue: (name: string, prompt: string) =>
    `▶️ Starting your queued command (session ${shortId(name)}): ${previewPrompt(prompt, 60)}`,
  queued: (position: number) =>
    `Queued (#${position}). It starts when the current task finishes. *cancel* stops all of them.`,
  queueFull: (maxQueued: number) =>
    maxQueued === 0
      ? 'A command is already running, and commands are not queued here. Wait for it to finish, or reply *cancel* to stop it.'
      : `You already have ${maxQueued} command${maxQueued === 1 ? '' : 's'} waiting. Wait for one to finish, or reply *cancel* to clear them.`,
  requestClosed: () => 'That request is no longer open. Reply *status* to see where things are.',
  unknownButton: () => 'That button is not one of ours. Reply with a word instead (*help* lists them).',
  nothingPending: () => 'Nothing is waiting for your decision right now. Send a command, or *status*.',
  nothingToCancel: () => 'Nothing is running. Send a command to start.',
  droppedFromQueue: (prompt: string) =>
    `🗑️ Dropped your queued command "${previewPrompt(prompt, 60)}": the task before it was rejected or expired. Send it again if you still want it.`,
  cancelling: (name: string, others: number) =>
    `Stopping session ${shortId(name)}${others ? ` and ${others} queued` : ''}…`,
  busy: () => 'Too many messages at once right now: this one was not taken. Please send it again in a minute.',
  failedToAccept: () => "Sorry, that message didn't go through on our side. Please send it again in a minute.",
  idle: () => 'No session running. Send a command to start one.',
  stickerRefused: () =>
    'Stickers are not commands. Send a command in words, or a photo with a caption saying what to do.',
  audioNotSupported: () => "Voice notes aren't supported yet. Please type your command instead.",
  mediaRefused: () =>
    'I can only take pictures (JPEG, PNG, WebP or GIF), not other files. Send the command in words, or as a picture with a caption.',
  imageNotNow: () =>
    'A picture can only come with a new command, not as an answer. Please answer in words, and send the picture with your next command.',
  imageFailed: (failure: 'tooLarge' | 'notImage' | 'refused' | 'tooMuch', maxBytes: number) =>
    ({
      tooLarge: `That picture is too large (over ${maxBytes >= 1_000_000 ? `${(maxBytes / 1_000_000).toFixed(1)} MB` : `${Math.round(maxBytes / 1000)} KB`}). Please send a smaller one.`,
      tooMuch: `Those pictures are too large together (over ${Math.floor((LIMITS.imagesBase64Bytes * 0.75) / 1_000_000)} MB in all) for the agent to take at once. Please send fewer or smaller ones with the command.`,
      notImage: 'That file is not a picture I can read (JPEG, PNG, WebP or GIF). Please send it as a photo.',
      refused: "I couldn't get that picture from WhatsApp. Please send it again.",
    })[failure],

  instructions(pending: Pending, hint?: string): string {
    if (hint === 'badNumber')
      return 'That number is not one of the options. Reply with a number from the list or your own answer.';
    switch (pending.kind) {
      case 'tool': {
        const request = toolRequest(pending);
        if (request.cut)
          return `Waiting for your decision on the ${pending.tool ?? 'tool'} request above (not shown whole): *deny <reason>* or *allow* (this call only).`;
        return `Waiting for your decision on ${request.inline ?? `the ${pending.tool ?? 'tool'} request above`}: *allow*, *allow always* or *deny <reason>*.`;
      }
      case 'question':
        return 'Waiting for your answer above: reply with a number or your own words (or *reject*).';
      case 'plan':
        return 'Waiting for your decision on the plan above: *approve*, *reject*, or write what to change.';
      case 'changes':
        return 'Waiting for your decision on the changes above: *approve* or *reject* (*diff <file>* shows a file).';
      case 'cost':
        return 'The run is paused for its cost: reply *continue* or *stop*.';
    }
  },

  /** `withRepo`: name the Session's repository (the install has several). */
  status(session: Session, queued: number, now: number, withRepo = false): string {
    const phase = session.status?.phase ?? 'Queued';
    const since = session.status?.startTime ?? session.metadata.creationTimestamp;
    const forText = since ? ` for ${humanDuration(now - new Date(since).getTime()).replace(/ \d+ s$/, '')}` : '';
    const last = session.status?.progress?.at(-1)?.text;
    const repo = withRepo ? session.metadata.labels?.[LABEL_REPO] : undefined;
    return [
      `Session ${shortId(session.metadata.name!)}${repo ? ` (${repo})` : ''} · ${phase}${forText}`,
      last ? `last: ${previewPrompt(showHidden(last), 60)}` : '',
      `queue: ${queued}`,
    ]
      .filter(Boolean)
      .join(' · ');
  },
  echoAllowed: (tool: string | undefined, always: boolean) =>
    `Allowed ${tool ?? 'it'} ${always ? 'for the rest of this session' : 'once'}.`,
  echoDenied: (reason: string | undefined) =>
    reason ? `Denied: ${previewPrompt(showHidden(reason), 100)}` : 'Denied.',
  echoChose: (n: number, label: string) => `You chose ${n} (${previewPrompt(showHidden(label), 60)}).`,
  echoAnswered: (answer: string) => `You answered: ${previewPrompt(showHidden(answer), 100)}`,
  /** `earlier`: lines of the same batch left out (only the newest are shown). */
  progress: (lines: string[], earlier = 0) =>
    [
      ...(earlier > 0 ? [`⏳ …${earlier} earlier step${earlier === 1 ? '' : 's'}`] : []),
      ...lines.map((l) => `⏳ ${showHidden(l)}`),
    ].join('\n'),
  progressOnStatus: () => 'More steps will not be sent one by one: reply *status* to see the latest.',
  overBudget: (spent: number, budget: { dailyUsd: number; timeZone: string }) =>
    `Today's budget is spent: ${usd(spent)} of ${usd(budget.dailyUsd)}. New commands start again after midnight (${budget.timeZone}). Commands already running still finish; queued ones do not start.`,
  costStopped: (name: string, costUsd: number | undefined) =>
    `🛑 Session ${shortId(name)} stopped at its cost pause${costUsd === undefined ? '' : ` (${usd(costUsd)})`}. The changes so far stay on the workspace; your queued commands still start, within today's budget.`,
  spendToday: (spent: number, dailyUsd: number) => `Today: ${usd(spent)}${dailyUsd > 0 ? ` of ${usd(dailyUsd)}` : ''}`,
  sessionCapped: (max: number) =>
    `This session has sent ${max} messages; further updates are on *status*. Requests for your decision and the result still come.`,

  pending(pending: Pending, approvalTimeout: string): string {
    switch (pending.kind) {
      case 'tool':
        return toolPending(pending);
      case 'question': {
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
      case 'plan':
        return `📝 The agent's plan:\n${requestText(planForPhone(pending.summary ?? ''), 'plan')}\n\nReply *approve* to run it, *reject* to drop it, or write what to change. (expires in ${expiry(approvalTimeout)})`;
      case 'changes':
        return `Reply *approve* to open a pull request or *reject* to undo. (expires in ${expiry(approvalTimeout)})`;
      case 'cost':
        return `💲 This run has used ${usd(pending.costUsd ?? 0)} so far. Continue? Reply *continue* or *stop* (the changes so far stay). (expires in ${expiry(approvalTimeout)})`;
    }
  },
  /** `cut`: the diff picture's line counts, when the picture goes with the caption. */
  changesCaption: (pending: Pending, diffStat: string | undefined, cut?: Result['diffLines']) =>
    [
      reviewCaption(showHidden(diffStat ?? pending.summary ?? ''), pending.summary && showHidden(pending.summary)),
      pictureCut(cut),
    ]
      .filter(Boolean)
      .join('\n'),
  reminder: (msLeft: number) =>
    `⏰ Still waiting for your approval — it expires in ${Math.max(1, Math.round(msLeft / 60_000))} min.`,

  /** `defaults` fill in what a Session does not say (its timeouts) and the queue limit. */
  finished(session: Session, defaults: SessionDefaults): string {
    const r = session.status?.result ?? {};
    const name = shortId(session.metadata.name!);
    switch (session.status?.phase) {
      case 'Succeeded':
        return [
          r.prUrl
            ? `✅ Pull request opened: ${r.prUrl}`
            : `✅ Done (session ${name}).${r.summary ? `\n${showHidden(r.summary)}` : ''}`,
          footer(session),
        ]
          .filter(Boolean)
          .join('\n');
      case 'Rejected':
        return session.spec.mode === 'plan' && !r.diffStat
          ? '↩️ Plan dropped; nothing was changed. Send a new command when you are ready.'
          : '↩️ Changes undone. Send a new command when you are ready.';
      case 'Cancelled':
        return stoppedAtCostPause(session) ? text.costStopped(name, r.costUsd) : `🛑 Session ${name} cancelled.`;
      case 'TimedOut':
        return '⌛ Approval expired. Your changes are kept on the workspace; send a new command to continue from them.';
      case 'Failed':
        return failure(session, defaults);
      default:
        return '';
    }
  },
};

/**
 * `git diff --stat` as the phone should read it:
 * "Ready for review — 3 files changed, +48 −6:" then one "  path | 33 ++-" line per file.
 */
export function reviewCaption(stat: string, summary?: string): string {
  const lines = stat
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const totals = lines.find((l) => /\d+ files? changed/.test(l));
  const files = lines.filter((l) => l !== totals).map((l) => `  ${l.replace(/\s*\|\s*/, ' | ')}`);
  if (!totals) return [`Ready for review${summary && summary !== stat ? ` — ${summary}` : ''}:`, ...files].join('\n');
  const count = (re: RegExp) => Number(re.exec(totals)?.[1] ?? 0);
  const [changed, plus, minus] = [count(/(\d+) files? changed/), count(/(\d+) insertions?/), count(/(\d+) deletions?/)];
  const delta = [plus ? `+${plus}` : '', minus ? `−${minus}` : ''].filter(Boolean).join(' ');
  return [
    `Ready for review — ${changed} file${changed === 1 ? '' : 's'} changed${delta ? `, ${delta}` : ''}:`,
    ...files,
  ].join('\n');
}

/** Says loudly that the diff pictures leave lines out: approving publishes them all the same. */
export function pictureCut(lines: Result['diffLines']): string {
  if (!lines || lines.inImage >= lines.total) return '';
  return `⚠️ The pictures show only ${lines.inImage} of ${lines.total} diff lines: ${lines.total - lines.inImage} lines are not in them, and approving publishes them too.`;
}

/** The agent's words of a request within REQUEST_TEXT_CHARS, saying what was left out and what the user can do. */
function requestText(shown: string, what: 'plan' | 'questions'): string {
  const { text: kept, cut } = cutShown(shown, REQUEST_TEXT_CHARS);
  if (!cut) return kept;
  return `${kept}\n… ${cut} more characters of the ${what} not shown — ${what === 'plan' ? 'write what to change (e.g. "a shorter plan"), or *reject*' : 'answer in your own words, or *reject*'}.`;
}

function expiry(approvalTimeout: string): string {
  return humanDuration(parseDuration(approvalTimeout))
    .replace(/ 0 s$/, '')
    .replace(/ 0 min$/, '');
}

/** Longer than this, or on several lines, a tool request is shown as a block of its own. */
const INLINE_CHARS = 300;

/** Bash: its command. Other tools: compact JSON, or one field a line when long (multi-line values last). */
function toolDetail(pending: Pending): string {
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

/** The tool request as shown (hidden characters escaped), within LIMITS.toolInputChars, and how much of it was left out. */
function toolShown(pending: Pending): { detail: string; cut: number } {
  const shown = cutShown(showHidden(toolDetail(pending)), LIMITS.toolInputChars);
  return { detail: shown.text, cut: shown.cut + Math.max(0, (pending.inputChars ?? 0) - (pending.input?.length ?? 0)) };
}

/** How much of a tool request's input the phone is not shown (the runner's cut, and the cut after escaping). */
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
  if (request.inline)
    return `🔐 The agent wants to run: ${request.inline}\nReply *allow*, *allow always* (for this session) or *deny <reason>*.`;
  if (!request.cut)
    return `🔐 The agent wants to run ${request.block}\nReply *allow*, *allow always* (for this session) or *deny <reason>*.`;
  return [
    `🔐 The agent wants to run ${request.block}`,
    `⚠️ CUT: ${request.cut} more characters are not shown. Reply *deny* if unsure (*deny split it up* asks the agent for smaller steps).`,
    'Reply *allow* (this call only; it was not shown whole) or *deny <reason>*.',
  ].join('\n');
}

function footer(session: Session): string {
  const s = session.status ?? {};
  const parts: string[] = [];
  if (s.startTime && s.completionTime)
    parts.push(`Took ${humanDuration(new Date(s.completionTime).getTime() - new Date(s.startTime).getTime())}`);
  if (s.result?.costUsd !== undefined) parts.push(`$${s.result.costUsd.toFixed(2)}`);
  const tokens = s.result?.tokens ? s.result.tokens.input + s.result.tokens.output : 0;
  if (tokens) parts.push(`${tokens >= 1000 ? `${Math.round(tokens / 1000)}k` : tokens} tokens`);
  return parts.join(' · ');
}

/**
 * "stop" at the cost pause: the Finished condition says so, or (before the controller wrote it) the
 * last decision answered a cost request (request ids are `<kind>-<hex>`) and no cancel was sent.
 */
function stoppedAtCostPause(session: Session): boolean {
  const finished = session.status?.conditions?.find((c) => c.type === 'Finished')?.reason;
  if (finished) return finished === Reason.CostStopped;
  return !session.spec.cancel && (session.spec.decisions?.at(-1)?.requestId.startsWith('cost-') ?? false);
}

const FAILURE_REASONS: readonly string[] = [
  Reason.OverBudget,
  Reason.QueueFull,
  Reason.RunTimeout,
  Reason.StartTimeout,
  Reason.PodLost,
  Reason.InvalidSpec,
  Reason.AgentFailed,
];

/** A failure in plain words: the first line of the runner's message, never a stack trace. */
function failure(session: Session, defaults: SessionDefaults): string {
  const reason = session.status?.conditions?.find((c) => FAILURE_REASONS.includes(c.reason))?.reason;
  const plain = showHidden((session.status?.result?.message ?? '').split('\n')[0]!.replace(/\s+at .*$/, '')).slice(
    0,
    300,
  );
  const runLimit = session.spec.timeouts?.run ?? defaults.timeouts.run;
  switch (reason) {
    case Reason.QueueFull:
      return text.queueFull(defaults.maxQueued);
    case Reason.OverBudget:
      return `💲 Not started: "${previewPrompt(session.spec.prompt, 60)}" — ${plain || "today's budget is spent"}.`;
    case Reason.RunTimeout:
      return `❌ The task ran past its time limit (${runLimit}) and was stopped. Partial changes are kept. Send a new command to continue.`;
    case Reason.StartTimeout:
      return `❌ The agent could not start: ${plain || 'its container did not start in time.'}`;
    case Reason.PodLost:
      return '❌ The agent stopped unexpectedly (its container went away). Partial changes are kept. Send the command again to retry.';
    case Reason.InvalidSpec:
      return '❌ That command could not be started (invalid settings). Please tell your operator.';
    default:
      return `❌ The agent stopped with an error${plain ? `: ${plain}` : ''}.\nPartial changes are kept. Reply *status* for details or send a new command.`;
  }
}
