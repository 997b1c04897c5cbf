// What a run needs before the agent starts: the checkout (at the base, at the tip of the pull request
// it continues, or the changes kept from before) and the prompt (for a fix, with GitHub's text as data).
// Each returns undefined once it has failed the Session saying why.
import type { Logger } from 'pino';
import { DEFAULT_BASE_BRANCH } from '../common/session/defaults.ts';
import { repoProblem } from '../common/session/repo.ts';
import type { Session } from '../common/session/schema.ts';
import { fixPrompt } from './forge/fix-context.ts';
import { repoSlug, type GitHubAccess } from './forge/github.ts';
import type { Git } from './git/store.ts';
import type { AgentImage } from './agents/types.ts';
import { ImageUnavailable, loadImages } from './pictures/from-phone.ts';
import type { MediaDeps } from './pictures/uploads.ts';
import { Stopped } from './requests.ts';
import type { StatusWriter } from './status.ts';
import { DISK_FULL_MESSAGE, isDiskFull } from './workspace/disk-full.ts';

export interface StartDeps {
  status: StatusWriter;
  git: Git;
  log: Logger;
  github: GitHubAccess;
  redact: (s: string) => string;
  repoHosts: readonly string[];
  workspace: string;
  now: () => Date;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The checkout ready for the agent; false once the Session has failed for want of it. A replacement runner
 * (`restarted`) says nothing of it: the phone has heard how the run started, and hears that it goes on.
 */
export async function prepareWorkspace(deps: StartDeps, spec: Session['spec'], restarted = false): Promise<boolean> {
  const { status, log } = deps;
  const refused = repoProblem(spec.repo, deps.repoHosts);
  if (refused) {
    await status.move({ type: 'AgentFailed' }, `Could not get the repository: ${refused}`);
    return false;
  }
  const base = spec.repo.baseBranch ?? DEFAULT_BASE_BRANCH;
  const pr = spec.pullRequest;
  try {
    const started = deps.now().getTime();
    const how = await deps.git.prepare(spec.repo.url, base, pr?.branch);
    log.info({ how, pullTip: deps.git.pullTip, ms: deps.now().getTime() - started }, 'workspace ready');
    if (restarted) return true;
    if (pr && deps.git.pullTip) status.addProgress(`Continuing pull request #${pr.number} (${pr.branch})`);
    if (pr && !deps.git.pullTip)
      status.addProgress(`The branch of pull request #${pr.number} is gone from the forge; starting from ${base}`);
    if (how === 'kept-changes') status.addProgress('Continuing from the changes kept on the workspace');
    return true;
  } catch (error) {
    const why = (await isDiskFull(error, deps.workspace))
      ? DISK_FULL_MESSAGE
      : `Could not get the repository: ${errorText(error)}`;
    await status.move({ type: 'AgentFailed' }, why);
    return false;
  }
}

/** The prompt; for a fix, with the failing checks or the review read from GitHub by the supervisor. */
export async function agentPrompt(deps: StartDeps, spec: Session['spec']): Promise<string | undefined> {
  const { fix, pullRequest } = spec;
  if (!fix || !pullRequest) return spec.prompt;
  const what = fix.kind === 'checks' ? 'the failing checks' : 'the review';
  try {
    const slug = repoSlug(spec.repo.url);
    const prompt = await fixPrompt(spec.prompt, { github: deps.github, redact: deps.redact, slug, pullRequest, fix });
    deps.log.info({ kind: fix.kind, chars: prompt.length - spec.prompt.length }, 'fix read from GitHub');
    deps.status.addProgress(`Read ${what} of pull request #${pullRequest.number} from GitHub`);
    return prompt;
  } catch (error) {
    deps.log.error({ err: error }, 'could not read the fix from GitHub');
    await deps.status.move({ type: 'AgentFailed' }, `Could not read ${what} from GitHub: ${errorText(error)}`);
    return undefined;
  }
}

/** The pictures sent with the command; undefined once the Session has failed for want of them. */
export async function agentPictures(
  deps: StartDeps & { media: MediaDeps },
  spec: Session['spec'],
  signal: AbortSignal,
): Promise<AgentImage[] | undefined> {
  try {
    return await loadImages(deps.media.relay, spec.images, signal);
  } catch (error) {
    if (signal.aborted) throw error;
    deps.log.error({ err: error }, 'could not read the pictures sent with the command');
    await deps.status.move(
      { type: 'AgentFailed' },
      error instanceof ImageUnavailable ? error.message : 'Could not get the picture you sent; please send it again.',
    );
    return undefined;
  }
}

/** Resolves once the controller has marked the Session Starting (or later); rejects with Stopped when stopped first. */
export async function waitForStart(status: StatusWriter, signal: AbortSignal, log: Logger): Promise<void> {
  const ready = () => status.phase !== undefined && status.phase !== 'Queued';
  if (ready()) return;
  log.info('waiting for the controller to mark the Session Starting');
  await new Promise<void>((resolve, reject) => {
    const off = status.onChange(() => ready() && (off(), resolve()));
    signal.addEventListener('abort', () => (off(), reject(new Stopped('stopped'))), { once: true });
  });
}
