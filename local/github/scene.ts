// What a test does to the stand-in besides calling its REST API: set the scene (required checks,
// collaborators, mergeability), act as GitHub's other users (CI runs and statuses, reviews,
// closes), and read pull requests — each step in turn with the requests (serial.ts).
import { createCheckRun, updateCheckRun, type CheckRunChange, type NewCheckRun } from './checks.ts';
import type { StandInContext } from './context.ts';
import type { CheckRun, CommitStatus, RecordedPull, Repository, Review } from './model.ts';
import { createPull, livePull, notePush, updatePull, type NewPull } from './pulls.ts';
import { submitReview, type NewReview } from './reviews.ts';
import type { Serial } from './serial.ts';
import { createStatus, type NewCommitStatus } from './statuses.ts';

export interface Scene {
  repository(owner: string, name: string): Repository;
  addRepository(owner: string, name: string, bareRepository: string): Repository;
  /** Branch protection: these check names must be green on the head before a merge. */
  requireChecks(owner: string, repo: string, names: string[]): void;
  /** Who may be asked for a review (anyone but the author when never set). */
  setCollaborators(owner: string, repo: string, logins: string[]): void;
  /** Overrides mergeability (undefined: git decides again). */
  setMergeable(owner: string, repo: string, number: number, mergeable: boolean | undefined): void;
  pull(owner: string, repo: string, number: number): RecordedPull;
  /** The pull request's head commit now (read from the bare repository). */
  headSha(owner: string, repo: string, number: number): Promise<string | null>;
  createPull(owner: string, repo: string, input: NewPull, user?: string): Promise<RecordedPull>;
  closePull(owner: string, repo: string, number: number, user?: string): Promise<void>;
  createCheckRun(owner: string, repo: string, input: NewCheckRun): Promise<CheckRun>;
  updateCheckRun(owner: string, repo: string, id: number, change: CheckRunChange): Promise<CheckRun>;
  /** A commit status on the commit sha, as a CI service would post it (`creator` the CI's login). */
  createStatus(
    owner: string,
    repo: string,
    sha: string,
    input: NewCommitStatus,
    creator?: string,
  ): Promise<CommitStatus>;
  submitReview(owner: string, repo: string, number: number, review: NewReview): Promise<Review>;
  /** After a push made outside the forge: `synchronize` for every pull request whose head moved. */
  notePush(owner: string, repo: string, user?: string): Promise<void>;
}

export function sceneOf(ctx: StandInContext, serial: Serial, login: string): Scene {
  const { store } = ctx;
  const repository = (owner: string, name: string) => {
    const repo = store.repository(owner, name);
    if (!repo) throw new Error(`the stand-in has no repository ${owner}/${name}`);
    return repo;
  };
  const pull = (owner: string, name: string, number: number) => {
    const found = store.pull(repository(owner, name), number);
    if (!found) throw new Error(`no pull request ${owner}/${name}#${number}`);
    return found;
  };
  const checkRun = (owner: string, name: string, id: number) => {
    const run = store.checkRun(repository(owner, name), id);
    if (!run) throw new Error(`no check run ${id} in ${owner}/${name}`);
    return run;
  };
  const inTurn = serial.run.bind(serial);
  return {
    repository,
    addRepository: (owner, name, path) => store.addRepository(owner, name, path),
    requireChecks(owner, name, names) {
      repository(owner, name).requiredChecks = names;
    },
    setCollaborators(owner, name, logins) {
      repository(owner, name).collaborators = logins;
    },
    setMergeable(owner, name, number, mergeable) {
      const found = pull(owner, name, number);
      if (mergeable === undefined) delete found.mergeable;
      else found.mergeable = mergeable;
    },
    pull,
    headSha: (owner, name, number) =>
      inTurn(async () => (await livePull(ctx, repository(owner, name), pull(owner, name, number))).headSha),
    createPull: (owner, name, input, user = login) =>
      inTurn(() => createPull(ctx, repository(owner, name), input, user)),
    closePull: (owner, name, number, user = login) =>
      inTurn(() => updatePull(ctx, repository(owner, name), pull(owner, name, number), { state: 'closed' }, user)),
    createCheckRun: (owner, name, input) => inTurn(() => createCheckRun(ctx, repository(owner, name), input)),
    updateCheckRun: (owner, name, id, change) =>
      inTurn(async () => updateCheckRun(ctx, repository(owner, name), checkRun(owner, name, id), change)),
    createStatus: (owner, name, sha, input, creator = 'stand-in-ci[bot]') =>
      inTurn(() => createStatus(ctx, repository(owner, name), sha, input, creator)),
    submitReview: (owner, name, number, review) =>
      inTurn(() => submitReview(ctx, repository(owner, name), pull(owner, name, number), review)),
    notePush: (owner, name, user = login) => inTurn(() => notePush(ctx, repository(owner, name), user)),
  };
}
