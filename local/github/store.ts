// The stand-in's state and its lookups. Repositories come from the folder the forge serves
// (`<root>/<owner>/<name>.git`), from a test's own list, or — with neither — are made up on first
// use (no git then: head shas are null and a merge only changes the pull request's state).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BareRepo } from './git.ts';
import type { CheckRun, CheckSuite, CommitStatus, RecordedPull, Repository, Review, ReviewComment } from './model.ts';

export interface StoreOptions {
  /** A folder of bare repositories `<owner>/<name>.git` (the forge's root): only these exist then. */
  root?: string;
  /** More repositories: `owner/name` → the bare repository's folder. */
  repositories?: Record<string, string>;
}

export class Store {
  readonly repositories = new Map<string, Repository>();
  readonly pulls: RecordedPull[] = [];
  readonly checkRuns: CheckRun[] = [];
  readonly checkSuites: CheckSuite[] = [];
  readonly statuses: CommitStatus[] = [];
  readonly reviews: Review[] = [];
  readonly reviewComments: ReviewComment[] = [];
  private nextId = 1000;
  private readonly userIds = new Map<string, number>();

  private readonly options: StoreOptions;

  constructor(options: StoreOptions) {
    this.options = options;
    for (const [slug, path] of Object.entries(options.repositories ?? {})) {
      const [owner, name] = slug.split('/');
      if (!owner || !name) throw new Error(`repository "${slug}" is not owner/name`);
      this.addRepository(owner, name, path);
    }
  }

  id(): number {
    return ++this.nextId;
  }

  /** A new object's id and the repository it belongs to. */
  stamp(repo: Repository): { id: number; owner: string; repo: string } {
    return { id: this.id(), owner: repo.owner, repo: repo.name };
  }

  userId(login: string): number {
    if (!this.userIds.has(login)) this.userIds.set(login, 5000 + this.userIds.size);
    return this.userIds.get(login)!;
  }

  addRepository(owner: string, name: string, path?: string): Repository {
    const repo: Repository = {
      id: this.id(),
      owner,
      name,
      ...(path ? { git: new BareRepo(path) } : {}),
      defaultBranch: 'main',
      requiredChecks: [],
    };
    this.repositories.set(`${owner}/${name}`.toLowerCase(), repo);
    return repo;
  }

  /** The repository owner/name; undefined when the stand-in serves a root and it is not there. */
  repository(owner: string, name: string): Repository | undefined {
    const known = this.repositories.get(`${owner}/${name}`.toLowerCase());
    if (known) return known;
    if (![owner, name].every((part) => /^[\w-][\w.-]*$/.test(part))) return undefined;
    if (this.options.root) {
      const path = join(this.options.root, owner, `${name}.git`);
      return existsSync(join(path, 'HEAD')) ? this.addRepository(owner, name, path) : undefined;
    }
    return this.options.repositories ? undefined : this.addRepository(owner, name);
  }

  /** The repository a forge URL path (`/owner/name.git…`) names. */
  repositoryAtPath(path: string): Repository | undefined {
    const match = /^\/([^/]+)\/([^/]+?)\.git(?:\/|$)/.exec(path);
    return match ? this.repository(match[1]!, match[2]!) : undefined;
  }

  pull(repo: Repository, number: number): RecordedPull | undefined {
    return this.pulls.find((p) => p.owner === repo.owner && p.repo === repo.name && p.number === number);
  }

  pullsOf(repo: Repository): RecordedPull[] {
    return this.pulls.filter((p) => p.owner === repo.owner && p.repo === repo.name);
  }

  /** Issues and pull requests share one sequence per repository. */
  nextPullNumber(repo: Repository): number {
    return this.pullsOf(repo).reduce((max, p) => Math.max(max, p.number), 0) + 1;
  }

  checkRun(repo: Repository, id: number): CheckRun | undefined {
    return this.checkRuns.find((r) => r.owner === repo.owner && r.repo === repo.name && r.id === id);
  }

  runsOfSuite(suiteId: number): CheckRun[] {
    return this.checkRuns.filter((r) => r.suiteId === suiteId);
  }

  suite(repo: Repository, headSha: string): CheckSuite | undefined {
    return this.checkSuites.find((s) => s.owner === repo.owner && s.repo === repo.name && s.headSha === headSha);
  }

  reviewsOf(pull: RecordedPull): Review[] {
    return this.reviews.filter((r) => r.owner === pull.owner && r.repo === pull.repo && r.number === pull.number);
  }

  commentsOf(pull: RecordedPull, reviewId?: number): ReviewComment[] {
    return this.reviewComments.filter(
      (c) =>
        c.owner === pull.owner &&
        c.repo === pull.repo &&
        c.number === pull.number &&
        (reviewId === undefined || c.reviewId === reviewId),
    );
  }
}
