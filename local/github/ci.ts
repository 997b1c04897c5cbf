// The stand-in's own CI, for `make dev` and tests that want checks without driving them: each
// pull request opened or pushed to gets a check run that starts, then completes with the verdict
// on its head. `fileVerdict`: red while the head has the file (its first lines are the output).
import type { StandInContext } from './context.ts';
import { createCheckRun, updateCheckRun } from './checks.ts';
import type { CheckConclusion, CheckOutput, Repository } from './model.ts';
import type { InTurn } from './serial.ts';

export interface StandInCi {
  /** The check run's name. */
  name: string;
  verdict(repo: Repository, headSha: string): Promise<{ conclusion: CheckConclusion; output: CheckOutput }>;
}

/** Fails while the head has `path` (e.g. `.ci-fail`), with its first lines as the failure; passes otherwise. */
export function fileVerdict(name = 'ci', path = '.ci-fail'): StandInCi {
  return {
    name,
    async verdict(repo, headSha) {
      const content = await repo.git?.fileAt(headSha, path);
      if (content === undefined)
        return { conclusion: 'success', output: { title: 'All checks passed', summary: 'ok' } };
      const lines = content.split('\n').slice(0, 20).join('\n');
      return { conclusion: 'failure', output: { title: `${path} is present`, summary: lines, text: content } };
    },
  };
}

/** Runs `ci` on every pull request opened or synchronized, one event after another. */
export function runCi(ctx: StandInContext, ci: StandInCi, inTurn: InTurn): void {
  ctx.webhooks.listeners.push((event, payload) => {
    if (event !== 'pull_request' || !['opened', 'synchronize', 'reopened'].includes(String(payload.action))) return;
    const { repository, pull_request: pull } = payload as {
      repository: { owner: { login: string }; name: string };
      pull_request: { head: { sha: string | null } };
    };
    const repo = ctx.store.repository(repository.owner.login, repository.name);
    const headSha = pull.head.sha;
    if (!repo || !headSha) return;
    void inTurn(async () => {
      const run = await createCheckRun(ctx, repo, { headSha, name: ci.name, status: 'in_progress' });
      const { conclusion, output } = await ci.verdict(repo, headSha);
      updateCheckRun(ctx, repo, run, { conclusion, output });
    });
  });
}
