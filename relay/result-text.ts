// How a Session ended, as the phone reads it: the result, the review caption, a failure in plain words.
import type { SessionDefaults } from '../common/session/defaults.ts';
import type { Result, Session } from '../common/session/schema.ts';
import { previewPrompt } from '../common/session/display.ts';
import { Reason } from '../common/session/state-machine.ts';
import { usd } from '../common/session/budget.ts';
import { showHidden } from './chat/shown.ts';
import { egressTimedOut } from './egress-text.ts';
import { humanDuration, shortId } from './text-format.ts';

export const queueFull = (maxQueued: number) =>
  maxQueued === 0
    ? 'A command is already running, and commands are not queued here. ' +
      'Wait for it to finish, or reply *cancel* to stop it.'
    : `You already have ${maxQueued} command${maxQueued === 1 ? '' : 's'} waiting. ` +
      'Wait for one to finish, or reply *cancel* to clear them.';

export const costStopped = (name: string, costUsd: number | undefined) =>
  `🛑 Session ${shortId(name)} stopped at its cost pause${costUsd === undefined ? '' : ` (${usd(costUsd)})`}. ` +
  "The changes so far stay on the workspace; your queued commands still start, within today's budget.";

/** `defaults` fill in what a Session does not say (its timeouts) and the queue limit. */
export function finished(session: Session, defaults: SessionDefaults): string {
  const r = session.status?.result ?? {};
  const name = shortId(session.metadata.name!);
  switch (session.status?.phase) {
    case 'Succeeded':
      return [
        r.pushed === 'added' || r.pushed === 'onNewTip'
          ? pushed(r)
          : r.prUrl
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
      return stoppedAtCostPause(session) ? costStopped(name, r.costUsd) : `🛑 Session ${name} cancelled.`;
    case 'TimedOut':
      if (session.status.pending?.kind === 'egress') return egressTimedOut(session.status.pending);
      return '⌛ Approval expired. Your changes are kept on the workspace; send a new command to continue from them.';
    case 'Failed':
      return failure(session, defaults);
    default:
      return '';
  }
}

/** A follow-up's commit on its pull request: where, the whole pull request's size, someone else's push. */
function pushed(r: Result): string {
  return [
    `✅ Pushed to pull request #${r.prNumber}${r.prUrl ? `: ${r.prUrl}` : ''}`,
    r.prStat ? `The pull request now: ${showHidden(r.prStat)}` : '',
    r.pushed === 'onNewTip' ? 'Someone else had pushed to it meanwhile: your changes went on top of theirs.' : '',
  ]
    .filter(Boolean)
    .join('\n');
}

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
  const left = lines.total - lines.inImage;
  return (
    `⚠️ The pictures show only ${lines.inImage} of ${lines.total} diff lines: ` +
    `${left} lines are not in them, and approving publishes them too.`
  );
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
      return queueFull(defaults.maxQueued);
    case Reason.OverBudget:
      return `💲 Not started: "${previewPrompt(session.spec.prompt, 60)}" — ${plain || "today's budget is spent"}.`;
    case Reason.RunTimeout:
      return (
        `❌ The task ran past its time limit (${runLimit}) and was stopped. ` +
        'Partial changes are kept. Send a new command to continue.'
      );
    case Reason.StartTimeout:
      return `❌ The agent could not start: ${plain || 'its container did not start in time.'}`;
    case Reason.PodLost:
      return (
        '❌ The agent stopped unexpectedly (its container went away). ' +
        'Partial changes are kept. Send the command again to retry.'
      );
    case Reason.InvalidSpec:
      return '❌ That command could not be started (invalid settings). Please tell your operator.';
    // No reason yet: the runner wrote Failed and the controller's Finished condition has not followed (the
    // controller writes its own failures with the condition), so it is the runner's AgentFailed.
    case Reason.AgentFailed:
    default:
      if (session.status?.result?.branch && !session.status.result.prUrl)
        return (
          `❌ The changes were not published: ${plain.replace(/\.+$/, '')}.\n` +
          'They are kept on the workspace. Reply *status* for details or send a new command.'
        );
      return agentFailed(plain);
  }
}

const agentFailed = (plain: string) =>
  `❌ The agent stopped with an error${plain ? `: ${plain.replace(/\.+$/, '')}` : ''}.\n` +
  'Partial changes are kept. Reply *status* for details or send a new command.';
