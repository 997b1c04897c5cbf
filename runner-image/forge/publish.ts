// Publishing approved changes. A new pull request: the commit pushed to tether/<Session name>, the work
// tree back to the base, the pull request opened (its body saying who asked, from which channel) and
// the person asked to review. A follow-up (spec.pullRequest): one more commit pushed to that branch,
// fast-forward only, onto a tip someone else pushed meanwhile when the trees merge cleanly; no new
// pull request. Published, or AgentFailed saying why (the branch on the result, the changes kept).
import type { Logger } from 'pino';
import { maskPhone } from '../../common/session/display.ts';
import type { PullRequestRef } from '../../common/session/forge-schema.ts';
import type { Session } from '../../common/session/schema.ts';
import { PushConflict, type Git } from '../git/store.ts';
import { personName } from '../git/text.ts';
import { SessionFinished, type StatusWriter } from '../status.ts';
import { createPullRequest, openPullRequestOf, repoSlug, requestReviewer, type GitHubAccess } from './github.ts';

export interface PublishDeps {
  git: Git;
  status: StatusWriter;
  log: Logger;
  github: GitHubAccess;
  redact: (s: string) => string;
}

export interface Approved {
  session: Session;
  /** The commit of the reviewed snapshot. */
  commit: string;
  /** Its message: a commit made again on a newer tip carries the same. */
  message: string;
  base: string;
  /** git's diff stat, shown in the pull request's body. */
  stat: string;
}

const CHANNEL_NAMES = { whatsapp: 'WhatsApp', web: 'the web chat' } as const;
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

const branchOf = (session: Session) => session.spec.pullRequest?.branch ?? `tether/${session.metadata.name!}`;

/**
 * Publishes the approved commit. `again`: a replacement runner publishing what the lost one may have published in
 * part — the push of the very commit already there is a no-op, and a pull request already open for the branch is
 * taken rather than opened twice.
 */
export async function publish(deps: PublishDeps, approved: Approved, again = false): Promise<void> {
  const { status } = deps;
  const { pullRequest } = approved.session.spec;
  const branch = branchOf(approved.session);
  try {
    if (pullRequest) await addToPullRequest(deps, approved, pullRequest);
    else await openPullRequest(deps, approved, branch, again);
    await status.move({ type: 'Published' });
  } catch (error) {
    if (error instanceof SessionFinished) throw error;
    deps.log.error({ err: error }, 'publishing failed');
    status.setResult({ branch });
    const message =
      error instanceof PushConflict ? `${error.message}; nothing was pushed` : `Publishing failed: ${errorText(error)}`;
    await status.move({ type: 'AgentFailed' }, message);
  }
}

async function addToPullRequest(deps: PublishDeps, approved: Approved, pr: PullRequestRef): Promise<void> {
  const { git, status } = deps;
  const pushed = await git.pushOnto(approved.session.spec.repo.url, pr.branch, approved.commit, approved.message);
  if (pushed.onNewTip)
    status.addProgress(`Someone else pushed to pull request #${pr.number} meanwhile: your changes went on top of it`);
  await git.revert();
  status.setResult({
    prUrl: pr.url,
    prNumber: pr.number,
    branch: pr.branch,
    commit: pushed.commit,
    pushed: pushed.onNewTip ? 'onNewTip' : 'added',
    prStat: await git.pullRequestSize(pushed.commit),
  });
}

/** "Asked by Ada Lovelace (+1415•••0123) from WhatsApp." — who asked, as far as the Session knows. */
export function askedBy(spec: Session['spec']): string {
  const person = spec.requester
    ? `${personName(spec.requester.name)} (${maskPhone(spec.phone)})`
    : maskPhone(spec.phone);
  return `Asked by ${person}${spec.channel ? ` from ${CHANNEL_NAMES[spec.channel]}` : ''}.`;
}

/**
 * The commit on the Session's branch when it holds exactly the reviewed tree: pushed by the lost runner (a commit
 * made again would differ in its date, and a fast-forward-only push of it would be refused).
 */
export async function publishedBefore(deps: PublishDeps, session: Session, tree: string): Promise<string | undefined> {
  const { git } = deps;
  const { url } = session.spec.repo;
  const ref = `refs/heads/${branchOf(session)}`;
  const listed = await git.run(['ls-remote', '--end-of-options', url, ref], { forge: url });
  if (!listed.split('\n').some((line) => line.split('\t')[1] === ref)) return undefined;
  const fetched = 'refs/tether/published';
  const fetch = [
    'fetch',
    '--quiet',
    '--no-tags',
    '--no-recurse-submodules',
    '--end-of-options',
    url,
    `+${ref}:${fetched}`,
  ];
  await git.run(fetch, { forge: url });
  const object = async (rev: string) => (await git.run(['rev-parse', '--verify', '--end-of-options', rev])).trim();
  if ((await object(`${fetched}^{tree}`)) !== tree) return undefined;
  // Only the commit this runner would have made: the reviewed tree with the review's base as its one parent.
  const [commit, ...parents] = (await git.run(['rev-list', '--parents', '-n', '1', '--end-of-options', fetched]))
    .trim()
    .split(' ');
  return parents.length === 1 && parents[0] === git.reviewBase ? commit : undefined;
}

async function openPullRequest(deps: PublishDeps, approved: Approved, branch: string, again: boolean) {
  const { git, status } = deps;
  const { session, commit, base, stat } = approved;
  await git.push(session.spec.repo.url, commit, branch);
  // What was approved now lives on the branch; the work tree goes back to the base, as after a commit.
  await git.revert();
  const slug = repoSlug(session.spec.repo.url);
  const title = approved.message.split('\n')[0]!;
  const summary = status.session?.status?.result?.summary ?? '';
  const body =
    `Requested from the phone through Tether. ${askedBy(session.spec)}\n\n${summary}\n\n` + `\`\`\`\n${stat}\n\`\`\``;
  const input = { ...slug, head: branch, base, title, body };
  const pr =
    (again && (await openPullRequestOf(deps.github, input, deps.redact))) ||
    (await createPullRequest(deps.github, input, deps.redact));
  status.setResult({
    prUrl: pr.url,
    prNumber: pr.number,
    branch,
    commit,
    pushed: 'opened',
    prStat: await git.pullRequestSize(commit),
  });
  const login = session.spec.requester?.github;
  if (login) await askReview(deps, { ...slug, number: pr.number }, login);
}

/** The person asked to review; GitHub's refusal is logged and told, never a failure of the run. */
async function askReview(deps: PublishDeps, pr: Parameters<typeof requestReviewer>[1], login: string) {
  try {
    await requestReviewer(deps.github, pr, login, deps.redact);
  } catch (error) {
    if (error instanceof SessionFinished) throw error;
    deps.log.warn({ err: error, login }, 'the review request was refused');
    deps.status.addProgress(`Could not ask @${login} to review pull request #${pr.number}: ${errorText(error)}`);
  }
}
