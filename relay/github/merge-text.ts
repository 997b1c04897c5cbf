// The words of *merge*: one line each, saying what happened or why not.
import { showHidden } from '../../common/hidden-text.ts';

const NAMES_SHOWN = 3;
const NAME_CHARS = 60;

const short = (sha: string) => sha.slice(0, 7);
const checksFailed = (count: number) => (count === 1 ? 'a check failed' : `${count} checks failed`);
/** A check's name as the phone sees it: one line, hidden characters shown, cut. */
const oneLine = (text: string, max: number) => {
  const line = showHidden(text.replace(/\s+/g, ' ')).trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};
const nameList = (names: string[]) => {
  const shown = names.slice(0, NAMES_SHOWN).map((n) => oneLine(n, NAME_CHARS));
  const more = names.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
};

export const MERGE_TEXT = {
  notAllowed: (name: string) => `${name} may not merge: the install's people list does not give merge rights.`,
  alreadyMerged: (n: number) => `Pull request #${n} is already merged.`,
  closed: (n: number) => `Pull request #${n} is closed; it cannot be merged.`,
  failed: (n: number, names: string[]) =>
    `Pull request #${n} cannot merge: ${checksFailed(names.length)} (${nameList(names)}).`,
  pending: (n: number, running: number, total: number) =>
    `Pull request #${n} cannot merge yet: ${running} of ${total} checks still running.`,
  noChecks: (n: number, sha: string) =>
    `Pull request #${n} cannot merge yet: no checks have run on its head (${short(sha)}), so nothing shows it green.`,
  conflicts: (n: number, base: string) => `Pull request #${n} has conflicts with ${base}; they must be resolved first.`,
  notPushed: (n: number, head: string, pushed: string) =>
    `Pull request #${n} was not merged: its head ${short(head)} is not the commit Tether pushed ` +
    `(${short(pushed)}); someone else pushed to it. Look at it on GitHub, or send a command to continue it.`,
  unknownMergeable: (n: number) =>
    `GitHub is still working out whether pull request #${n} can merge; send merge again in a minute.`,
  headMoved: (n: number) =>
    `Pull request #${n} changed while merging (a new commit); its checks must pass on the new head first.`,
  refused: (n: number, why: string) => `GitHub would not merge pull request #${n}: ${why}`,
  merged: (n: number, sha: string | undefined) =>
    `🎉 Merged pull request #${n}${sha ? ` (${short(sha)})` : ''}. Your next command there starts from the base branch.`,
  unreachable: (n: number, why: string) => `Could not merge pull request #${n}: ${why}`,
};
