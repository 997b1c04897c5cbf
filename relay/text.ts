// Every word the phone sees. docs/architecture.md ("What the phone sees") is the guide; keep the shape,
// improve the words here (an open request's words are in request-text.ts, a Session's end in result-text.ts).
import { LIMITS, type Pending, type Result, type Session } from '../common/session/schema.ts';
import { previewPrompt } from '../common/session/display.ts';
import { LABEL_REPO } from '../common/session/names.ts';
import { usd } from '../common/session/budget.ts';
import { showHidden } from './chat/shown.ts';
import type { PullRecord, PullState } from './pulls/types.ts';
import { instructions, pendingText } from './request-text.ts';
import { egressAllowed } from './egress-text.ts';
import { costStopped, finished, pictureCut, queueFull, reviewCaption } from './result-text.ts';
import { humanDuration, shortId } from './text-format.ts';
import { echoName } from './inbound/command.ts';

export { cutChars } from './request-text.ts';
export { pictureCut, reviewCaption } from './result-text.ts';

/** The pictures of one message, as bytes (LIMITS counts them in base64). */
const IMAGES_BYTES = LIMITS.imagesBase64Bytes * 0.75;

const pictureSize = (bytes: number) =>
  bytes >= 1_000_000 ? `${(bytes / 1_000_000).toFixed(1)} MB` : `${Math.round(bytes / 1000)} KB`;

/** Enough names for a 1,600-character message. */
const DIFF_NAMES_SHOWN = 12;

export const text = {
  /** `repos`: the install's repositories and the phone's default, when it has more than one. */
  help: (repos?: string) =>
    [
      'Send a command in plain words, e.g. "fix the failing login test".',
      'Plan first: *plan: <command>* — the agent sends its plan; ' +
        '*approve* runs it, *reject* drops it, or write what to change.',
      'While it runs: *status* (s) · *cancel* (c).',
      'When asked: tap a button under the request, or reply *approve* (a) · *reject* (r) · ' +
        '*allow* · *allow always* · *deny <reason>* · a number or your own answer.',
      '🌐 A host the agent wants to reach: *allow* (once) · *allow session* · ' +
        '*allow always* (this repository, later commands too) · *deny <reason>*.',
      "Reviewing changes: *diff <file>* shows one file's pages · *diff* lists the changed files.",
      'A picture with a caption: the caption is the command, and the agent sees the picture.',
      "A run paused for its cost: *continue* · *stop*. *status* shows today's spend.",
      'Pull requests: your next command continues your open one · *new <command>* starts another · ' +
        '*prs* lists yours · *pr <n>* picks one · on a notice: *fix* · *details* · *ignore* · *merge*.',
      ...(repos
        ? [
            repos,
            'Repositories: *@name <command>* for one command · *repo <name>* sets your default · *repo* lists them.',
          ]
        : []),
    ].join('\n'),
  repoUsage: (name: string) =>
    `*@${name}* goes in front of a command for that repository, e.g. "@${name} fix the navbar". ` +
    `Reply *repo ${name}* to make it your default.`,
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
  repoNotYours: (name: string, mine: string[]) =>
    `*${name}* is not one of your repositories here. Yours: ${mine.join(', ')}. ` +
    'Start a command with *@name* to pick one.',
  repoGone: (name: string) =>
    `The repository of that pull request (${echoName(name)}) is no longer set up here. Nothing was started.`,
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
  /** `pr`: the pull request it continues; `from`: the base branch a `new` command starts from. */
  started: (name: string, how: { plan?: boolean; repo?: string; pr?: number; from?: string } = {}) =>
    `On it (session ${shortId(name)})${how.repo ? ` in *${how.repo}*` : ''}` +
    `${how.pr ? ` — continuing PR #${how.pr}` : how.from ? ` — a new pull request from ${how.from}` : ''}.` +
    `${how.plan ? ' The plan comes first, for your approval.' : ''} Reply *cancel* to stop.`,
  startedFromQueue: (name: string, prompt: string) =>
    `▶️ Starting your queued command (session ${shortId(name)}): ${previewPrompt(prompt, 60)}`,
  queued: (position: number, pr?: number) =>
    `Queued (#${position})${pr ? ` — continuing PR #${pr}` : ''}. ` +
    'It starts when the current task finishes. *cancel* stops all of them.',
  queueFull,
  requestClosed: () => 'That request is no longer open. Reply *status* to see where things are.',
  requestOnItsWay: () => 'A new request is on its way to you: read it, then answer it. Nothing was decided.',
  unknownButton: () => 'That button is not one of ours. Reply with a word instead (*help* lists them).',
  nothingPending: () => 'Nothing is waiting for your decision right now. Send a command, or *status*.',
  nothingToCancel: () => 'Nothing is running. Send a command to start.',
  droppedFromQueue: (prompt: string) =>
    `🗑️ Dropped your queued command "${previewPrompt(prompt, 60)}": the task before it was rejected or expired. ` +
    'Send it again if you still want it.',
  cancelling: (name: string, others: number) =>
    `Stopping session ${shortId(name)}${others ? ` and ${others} queued` : ''}…`,
  busy: () => 'Too many messages at once right now: this one was not taken. Please send it again in a minute.',
  failedToAccept: () => "Sorry, that message didn't go through on our side. Please send it again in a minute.",
  idle: () => 'No session running. Send a command to start one.',
  stickerRefused: () =>
    'Stickers are not commands. Send a command in words, or a photo with a caption saying what to do.',
  audioNotSupported: () => "Voice notes aren't supported yet. Please type your command instead.",
  mediaRefused: () =>
    'I can only take pictures (JPEG, PNG, WebP or GIF), not other files. ' +
    'Send the command in words, or as a picture with a caption.',
  imageNotNow: () =>
    'A picture can only come with a new command, not as an answer. ' +
    'Please answer in words, and send the picture with your next command.',
  imageFailed: (failure: 'tooLarge' | 'notImage' | 'refused' | 'tooMuch', maxBytes: number) =>
    ({
      tooLarge: `That picture is too large (over ${pictureSize(maxBytes)}). Please send a smaller one.`,
      tooMuch:
        `Those pictures are too large together (over ${Math.floor(IMAGES_BYTES / 1_000_000)} MB in all) ` +
        'for the agent to take at once. Please send fewer or smaller ones with the command.',
      notImage: 'That file is not a picture I can read (JPEG, PNG, WebP or GIF). Please send it as a photo.',
      refused: "I couldn't get that picture from WhatsApp. Please send it again.",
    })[failure],

  instructions,

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
  echoAllowedHost: egressAllowed,
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
    `Today's budget is spent: ${usd(spent)} of ${usd(budget.dailyUsd)}. ` +
    `New commands start again after midnight (${budget.timeZone}). ` +
    'Commands already running still finish; queued ones do not start.',
  costStopped,
  spendToday: (spent: number, dailyUsd: number) => `Today: ${usd(spent)}${dailyUsd > 0 ? ` of ${usd(dailyUsd)}` : ''}`,
  sessionCapped: (max: number) =>
    `This session has sent ${max} messages; further updates are on *status*. ` +
    'Requests for your decision and the result still come.',

  pending: pendingText,
  /**
   * `cut`: the diff picture's line counts, when the picture goes with the caption; `pull`: the pull request a
   * follow-up adds to, and its whole size with these changes.
   */
  changesCaption: (
    pending: Pending,
    diffStat: string | undefined,
    cut?: Result['diffLines'],
    pull?: { number: number; stat?: string },
  ) =>
    [
      reviewCaption(showHidden(diffStat ?? pending.summary ?? ''), pending.summary && showHidden(pending.summary)),
      pull?.stat ? `Pull request #${pull.number} with these changes: ${showHidden(pull.stat)}` : '',
      pictureCut(cut),
    ]
      .filter(Boolean)
      .join('\n'),
  reminder: (msLeft: number) =>
    `⏰ Still waiting for your approval — it expires in ${Math.max(1, Math.round(msLeft / 60_000))} min.`,

  finished,

  newUsage: () =>
    'Send *new <command>* to start a new pull request from the base branch instead of continuing your open one, ' +
    'e.g. "new add a footer".',
  noPulls: () => 'You have no open pull requests here. Your next command opens one when you approve its changes.',
  /** One line of `prs`: `prompt` is the command that opened it, when its Session is still kept. */
  pullLine: (r: PullRecord, prompt: string | undefined, how: { current: boolean; repo?: string }) =>
    `• #${r.number}${how.repo ? ` (${how.repo})` : ''} ${previewPrompt(showHidden(prompt ?? r.branch), 60)} — ` +
    `${r.fixing ? 'open, being fixed' : 'open'}${how.current ? ' · current' : ''}`,
  pullList: (lines: string[], more: number) =>
    [
      'Your open pull requests:',
      ...lines,
      ...(more > 0 ? [`…and ${more} more.`] : []),
      'New commands continue the current one. *pr <n>* picks another · *new <command>* starts a new one.',
    ].join('\n'),
  pullChosen: (number: number, url: string, repo?: string) =>
    `Your next commands${repo ? ` on *${repo}*` : ''} continue PR #${number}: ${url}`,
  pullNotOpen: (number: number, state: PullState) =>
    `PR #${number} is ${state}: new commands start from the base branch. *prs* lists your open ones.`,
  pullUnknown: (number: number) => `You have no pull request #${number} here. *prs* lists your open ones.`,
  statusPull: (number: number, url: string) => `PR #${number} is open: ${url} — new commands continue it.`,
  mergeNotYours: () =>
    'Merging from the phone is not among your rights here. Merge it on GitHub, or ask whoever runs Tether.',
  pullActionsOff: () => 'Pull request notices are not set up here, so there is nothing to answer with that word.',
};
