// One Session, start to finish: Working → agent → changes gate → publish or revert → final phase.
import type { ModelSpend } from './model/spend.ts';
import type { Logger } from 'pino';
import { onceGranted } from '../common/kube/errors.ts';
import { DEFAULT_BASE_BRANCH } from '../common/session/defaults.ts';
import { truncate } from '../common/session/display.ts';
import { LIMITS, type Session } from '../common/session/schema.ts';
import { isTerminal, type Effect } from '../common/session/state-machine.ts';
import { SCREENSHOT_TOOL, type Agent } from './agents/types.ts';
import { DISK_FULL_MESSAGE, isDiskFull } from './workspace/disk-full.ts';
import { commitMessage, cutDiff, type Git, type Snapshot } from './git/store.ts';
import { SnapshotRefused } from './workspace/snapshot.ts';
import { publish, publishedBefore } from './forge/publish.ts';
import type { GitHubAccess } from './forge/github.ts';
import { agentPictures, agentPrompt, prepareWorkspace, waitForStart } from './start.ts';
import { RunnerHost } from './agent-callbacks.ts';
import type { Asker } from './egress/link.ts';
import { answerDiffRequests, DiffDrawer, diffFileNames } from './pictures/diff-review.ts';
import type { FileDiff } from './pictures/diff-parse.ts';
import type { Browsers } from './pictures/chromium.ts';
import { RunMedia } from './pictures/run-media.ts';
import type { MediaDeps } from './pictures/uploads.ts';
import type { Policy } from './policy.ts';
import { Requests, Stopped } from './requests.ts';
import { SessionFinished, type StatusWriter } from './status.ts';
import { leftForReplacement, REPLACED, restartedIn, resumeRun, type AgentRun, type Resumable } from './restart.ts';

export interface RunnerDeps {
  /** The model proxy's metering, when Claude Code's calls go through it: then the run's spend. */
  modelSpend?: ModelSpend;
  status: StatusWriter;
  agent: Agent;
  git: Git;
  browsers: Browsers;
  policy: Policy;
  log: Logger;
  media: MediaDeps;
  /** The workspace volume's root (its mount point). */
  workspace: string;
  repoDir: string;
  github: GitHubAccess;
  /** The install's repository host list: git runs, and the token goes, only to these. */
  repoHosts: readonly string[];
  redact: (s: string) => string;
  /**
   * Kills every process of the agent container (the agent channel), saying how many linger; unset when the agent runs
   * here.
   */
  freezeAgent?: () => Promise<{ lingering: number }>;
  egress?: { attach(asker: Asker): () => Promise<void> }; // the egress proxy's asks, taken by each agent run
  now: () => Date;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
const unreadText = (why: string) => `Tether did not read the changes (${why}); they are kept on the workspace.`;
const LEFT_OUT_SHOWN = 5;
const baseOf = (spec: Session['spec']) => spec.repo.baseBranch ?? DEFAULT_BASE_BRANCH;

export class Runner implements Resumable {
  readonly deps: RunnerDeps;
  readonly stop = new AbortController();
  private readonly media: RunMedia;
  private readonly diffs: DiffDrawer;
  session!: Session;
  /** The Pod the Session named when this runner took it: another there later means the run went on elsewhere. */
  private ownPod: string | undefined;
  private freezing: Promise<string | undefined> | undefined;

  constructor(deps: RunnerDeps) {
    this.deps = deps;
    this.diffs = new DiffDrawer(deps.browsers);
    this.media = new RunMedia(deps);
    deps.status.onChange((s) => {
      if (s.spec.cancel) this.stop.abort('cancel');
      else if (isTerminal(s.status?.phase)) this.stop.abort('finished');
      else if (this.ownPod && s.status?.podName && s.status.podName !== this.ownPod) this.stop.abort(REPLACED);
    });
  }

  /** Runs the Session; resolves when a terminal phase is written or found. */
  async run(): Promise<void> {
    try {
      await this.body();
    } catch (error) {
      if (error instanceof SessionFinished) return;
      if (!this.stop.signal.aborted && (await isDiskFull(error, this.deps.workspace))) {
        this.deps.log.error({ err: error }, 'the workspace volume is full');
        await this.deps.status.move({ type: 'AgentFailed' }, DISK_FULL_MESSAGE);
        return;
      }
      if (!(error instanceof Stopped) && !this.stop.signal.aborted) throw error;
    }
    if (this.stop.signal.aborted) await this.finishStopped(String(this.stop.signal.reason));
  }

  private async body(): Promise<void> {
    const { status } = this.deps;
    // The Pod may start before the API server's authorizer sees the Role naming this Session.
    this.session = await onceGranted(() => status.load());
    this.ownPod = this.session.status?.podName;
    await waitForStart(this.deps.status, this.stop.signal, this.deps.log);
    const restarted = restartedIn(this.session);
    if (restarted) return resumeRun(restarted, this);
    if (status.phase === 'Starting') await status.move({ type: 'RunnerStarted' });
    if (await prepareWorkspace(this.deps, this.session.spec)) await this.firstRun();
  }

  async firstRun(): Promise<void> {
    const { spec } = this.session;
    const prompt = await agentPrompt(this.deps, spec);
    if (prompt === undefined) return;
    const images = await agentPictures(this.deps, spec, this.stop.signal);
    if (!images) return;
    await this.runAgent({ prompt, images, mode: spec.mode ?? 'run', resume: spec.resumeAgentSession });
  }

  async revertIf(due: readonly Effect[]): Promise<void> {
    if (due.includes('RevertWorkspace')) await this.deps.git.revert();
  }

  async runAgent(run: AgentRun): Promise<void> {
    const { status, log } = this.deps;
    const { spec } = this.session;
    const requests = new Requests(status, this.stop.signal, run.answered);
    const host = new RunnerHost({
      status,
      requests,
      policy: this.deps.policy,
      repoDir: this.deps.repoDir,
      log,
      tools: { [SCREENSHOT_TOOL]: (input) => this.media.screenshot(input) },
      onFinal: (reason) => this.stop.abort(reason),
      costPauseUsd: spec.costPauseUsd,
      modelSpend: this.deps.modelSpend,
      spentBefore: run.spentBefore,
    });
    const { prompt, images, mode, resume } = run;
    const options = { prompt, images, cwd: this.deps.repoDir, mode, resume, signal: this.stop.signal };
    const detach = this.deps.egress?.attach({ requests, runningTool: () => host.runningTool() });
    const result = await this.deps.agent.run(options, host).finally(() => detach?.());
    log.info({ ok: result.ok, exitCode: result.exitCode, costUsd: host.spentUsd }, 'agent finished');
    await host.pauseAnswered();
    this.deps.status.setResult(host.resultOf(result));
    if (this.stop.signal.aborted) return;
    if (!result.ok) return this.fail(result.message ?? 'The agent stopped with an error.');
    const { snapshot, unread } = await this.changes();
    if (unread) {
      await status.move({ type: 'AgentFailed' }, unreadText(unread));
      return;
    }
    if (!snapshot) {
      await this.deps.git.settle();
      await status.move({ type: 'FinishedWithoutChanges' });
      return;
    }
    await this.changesGate(snapshot);
  }

  /** Publishing after a restart: the reviewed tree, already on the branch or read again from the workspace. */
  async publishReviewed(): Promise<void> {
    const { status } = this.deps;
    const { spec, metadata } = this.session;
    const result = status.session?.status?.result;
    const message = commitMessage(spec.prompt, metadata.name!, spec.requester);
    const tree = result?.snapshotTree;
    const commit =
      (tree && (await publishedBefore(this.deps, this.session, tree))) || (await this.reviewedCommit(message));
    if (!commit) return;
    const approved = { session: this.session, commit, message, base: baseOf(spec), stat: result?.diffStat ?? '' };
    await publish(this.deps, approved, true);
  }

  /** A commit of the reviewed tree read again from the workspace; undefined once the Session failed for want of it. */
  private async reviewedCommit(message: string): Promise<string | undefined> {
    const { snapshot, unread } = await this.changes();
    const reviewed = this.deps.status.session?.status?.result?.snapshotTree;
    if (snapshot && snapshot.tree === reviewed) return this.deps.git.commit(snapshot, message);
    const why = unread ? unreadText(unread) : 'The workspace no longer holds the changes as they were reviewed.';
    await this.deps.status.move(
      { type: 'AgentFailed' },
      `The runner restarted before publishing. ${why} Nothing was pushed.`,
    );
    return undefined;
  }

  /** Kills every process of the agent container, once; undefined when that held, else why not. */
  private freeze(): Promise<string | undefined> {
    const { freezeAgent } = this.deps;
    this.freezing ??= !freezeAgent
      ? Promise.resolve(undefined)
      : freezeAgent().then(
          (report) => (report.lingering ? `${report.lingering} of the agent's processes did not stop` : undefined),
          (error: unknown) => `the agent's processes could not be stopped: ${errorText(error)}`,
        );
    return this.freezing;
  }

  /** The checkout's changes, read only once nothing of the agent's runs; else why they were not read. */
  private async changes(): Promise<{ snapshot?: Snapshot; unread?: string }> {
    const unfrozen = await this.freeze();
    if (unfrozen) return { unread: unfrozen };
    try {
      return { snapshot: await this.deps.git.changes() };
    } catch (error) {
      if (error instanceof SnapshotRefused) return { unread: error.message };
      throw error;
    }
  }

  /** The review comes from the snapshot, never from the work tree: it is what approving pushes. */
  private async recordDiff(snapshot: Snapshot, withImage: boolean): Promise<{ stat: string; files: FileDiff[] }> {
    const diff = await this.deps.git.diff(snapshot);
    const { leftOut } = snapshot;
    if (leftOut.length) {
      const more = leftOut.length > LEFT_OUT_SHOWN ? ` and ${leftOut.length - LEFT_OUT_SHOWN} more` : '';
      this.deps.status.addProgress(`Left out of the changes: ${leftOut.slice(0, LEFT_OUT_SHOWN).join(', ')}${more}`);
    }
    this.deps.status.setResult({
      snapshotTree: snapshot.tree,
      diffStat: truncate(diff.stat, 8000),
      diff: cutDiff(diff.full, LIMITS.diffChars),
    });
    if (!withImage) return { stat: diff.stat, files: [] };
    const lastLine = diff.stat.split('\n').at(-1)?.trim() ?? '';
    const review = await this.diffs.review(diff.full, lastLine || `${diff.files} files changed`);
    this.deps.status.setResult({
      diffLines: { total: diff.lines, inImage: Math.min(diff.lines, review.shownRawLines) },
      diffFiles: {
        names: diffFileNames(review.files),
        total: review.files.length,
        shown: review.files.length - review.hidden.length,
      },
    });
    // The pictures are a convenience: without them the phone still gets the stat as text.
    await this.media.publishDiffPages(review.pictures, { caption: lastLine }).catch((error: unknown) => {
      this.deps.log.warn({ err: error }, 'diff image not stored');
      this.deps.status.addProgress('The diff picture could not be sent; the list of changes follows as text');
    });
    return { stat: diff.stat, files: review.files };
  }

  private async changesGate(snapshot: Snapshot): Promise<void> {
    const { status, git } = this.deps;
    const { stat, files } = await this.recordDiff(snapshot, true);
    const { spec, metadata } = this.session;
    const message = commitMessage(spec.prompt, metadata.name!, spec.requester);
    const commit = await git.commit(snapshot, message);
    const prStat = await git.pullRequestSize(commit);
    status.setResult({ prStat });
    const whole = spec.pullRequest ? `\nWhole pull request #${spec.pullRequest.number}: ${prStat}` : '';
    const stopAnswering = answerDiffRequests({
      status,
      drawer: this.diffs,
      files,
      log: this.deps.log,
      publish: (pictures, request, file) => this.media.publishDiffPages(pictures, { caption: file, request }),
    });
    const { effects } = await new Requests(status, this.stop.signal)
      .raise('changes', { summary: truncate(stat, LIMITS.textChars - whole.length) + whole }, (due) =>
        this.revertIf(due),
      )
      .finally(stopAnswering);
    if (!effects.includes('Publish')) return;
    await publish(this.deps, { session: this.session, commit, message, base: baseOf(spec), stat });
  }

  private async fail(message: string): Promise<void> {
    const unread = await this.recordLeftover();
    await this.deps.status.move({ type: 'AgentFailed' }, unread ? `${message} ${unreadText(unread)}` : message);
  }

  /** Records the changes a run leaves; with none, a pull request's checkout goes back on the base. */
  private async recordLeftover(): Promise<string | undefined> {
    const { snapshot, unread } = await this.changes();
    if (snapshot) await this.recordDiff(snapshot, false);
    else if (!unread) await this.deps.git.settle();
    return unread;
  }

  /** SIGTERM, cancel, or someone else's final phase: the agent is already stopped here. */
  private async finishStopped(reason: string): Promise<void> {
    const { status } = this.deps;
    try {
      const fresh = await status.load();
      if (isTerminal(fresh.status?.phase)) return;
      if (fresh.spec.cancel) {
        await status.move({ type: 'Cancel' }, 'Cancelled from the phone.');
        return;
      }
      const left = leftForReplacement(reason, fresh, this.ownPod);
      if (left) return this.deps.log.info({ reason }, left);
      const unread = await this.recordLeftover();
      const kept = unread ? unreadText(unread) : 'partial changes are kept on the workspace.';
      const moved = await status.move({ type: 'AgentFailed' }, `The runner was stopped (${reason}); ${kept}`);
      if (!moved) this.deps.log.warn({ phase: status.phase }, 'could not record the stop in this phase');
    } catch (error) {
      if (!(error instanceof SessionFinished)) throw error;
    }
  }
}
