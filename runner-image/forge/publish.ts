// Publishing approved changes: the commit pushed to tether/<Session name>, the work tree back to the
// base, a pull request opened; Published, or AgentFailed saying why (the branch kept on the result).
import type { Logger } from 'pino';
import type { Session } from '../../common/session/schema.ts';
import type { TokenSource } from '../git/env.ts';
import { commitMessage, type Git } from '../git/store.ts';
import { SessionFinished, type StatusWriter } from '../status.ts';
import { createPullRequest, repoSlug } from './github.ts';

export interface PublishDeps {
  git: Git;
  status: StatusWriter;
  log: Logger;
  github: { apiUrl: string; token: TokenSource };
  redact: (s: string) => string;
}

export interface Approved {
  session: Session;
  /** The commit of the reviewed snapshot. */
  commit: string;
  base: string;
  /** git's diff stat, shown in the pull request's body. */
  stat: string;
}

export async function publish(deps: PublishDeps, { session, commit, base, stat }: Approved): Promise<void> {
  const { git, status } = deps;
  const branch = `tether/${session.metadata.name!}`;
  try {
    await git.push(session.spec.repo.url, commit, branch);
    // What was approved now lives on the branch; the work tree goes back to the base, as after a commit.
    await git.revert();
    const { owner, repo } = repoSlug(session.spec.repo.url);
    const title = commitMessage(session.spec.prompt, '').split('\n')[0]!;
    const summary = status.session?.status?.result?.summary ?? '';
    const body = `Requested from the phone through Tether.\n\n${summary}\n\n\`\`\`\n${stat}\n\`\`\``;
    const pr = await createPullRequest(
      deps.github.apiUrl,
      deps.github.token(),
      { owner, repo, head: branch, base, title, body },
      deps.redact,
    );
    status.setResult({ prUrl: pr.url, branch });
    await status.move({ type: 'Published' });
  } catch (error) {
    if (error instanceof SessionFinished) throw error;
    deps.log.error({ err: error }, 'publishing failed');
    status.setResult({ branch });
    await status.move({ type: 'AgentFailed' }, `Publishing failed: ${errorText(error)}`);
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
