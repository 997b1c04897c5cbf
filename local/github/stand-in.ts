// A stand-in for GitHub, built from its REST and webhook documentation, for tests and `make dev`:
// pull requests on the bare repositories the local forge serves, check runs and suites, reviews,
// merges done with git, an App's JWT and installation tokens (scopes and expiry enforced on REST
// and — through the forge's authorize hook — on git), ETags, and signed webhook deliveries with
// retries and redeliveries. Loopback only.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Auth, type AppConfig, type InstallationToken } from './auth.ts';
import { createCheckRun, updateCheckRun, type CheckRunChange, type NewCheckRun } from './checks.ts';
import { runCi, type StandInCi } from './ci.ts';
import { standInClock, type StandInClock } from './clock.ts';
import type { StandInContext } from './context.ts';
import type { CheckRun, RecordedPull, Repository, Review } from './model.ts';
import { createPull, livePull, notePush, updatePull, type NewPull } from './pulls.ts';
import { submitReview, type NewReview } from './reviews.ts';
import { handler, type ApiRequest, type Injected } from './router.ts';
import { Store } from './store.ts';
import { Webhooks, type Delivery, type WebhookHook, type WebhookOptions } from './webhooks.ts';

export interface GitHubStandInOptions {
  /** A token with every right (a personal token). With no token and no App, any request is taken. */
  token?: string;
  tokens?: string[];
  /** The login the fixed tokens act as (default tether-bot). */
  login?: string;
  /** The forge's root: the bare repositories `<root>/<owner>/<name>.git` are the only repositories then. */
  root?: string;
  /** More repositories, `owner/name` → bare repository folder. */
  repositories?: Record<string, string>;
  app?: AppConfig;
  /** An installation token's life (default an hour). */
  tokenLifetimeMs?: number;
  /** Webhook targets from the start (more with addWebhook). */
  hooks?: Array<Omit<WebhookHook, 'id'>>;
  /** Retries and back-off of deliveries. */
  webhooks?: WebhookOptions;
  /** A CI of the stand-in's own that checks every pull request opened or pushed to (ci.ts). */
  ci?: StandInCi;
}

/** What the forge (local/git-forge.ts) asks the stand-in: may this token fetch or push here, and a push happened. */
export interface ForgeHooks {
  authorize(access: { repository: string; write: boolean; token?: string }): boolean;
  onPushed(repository: string): void;
}

export interface GitHubStandIn {
  /** Base URL to use as GITHUB_API_URL. */
  url: string;
  /** Every pull request, in creation order. */
  pulls: RecordedPull[];
  /** Every REST request answered, with its status (304s included). */
  requests: ApiRequest[];
  /** Every webhook delivery, with its attempts. */
  deliveries: Delivery[];
  /** Installation tokens minted so far. */
  tokens: InstallationToken[];
  clock: StandInClock;
  /** An installation token's life from now on. */
  setTokenLifetime(ms: number): void;
  /** Makes the next n pull-request creations fail with this status. */
  failNext(status: number, n?: number): void;
  forgeHooks: ForgeHooks;
  addWebhook(hook: Omit<WebhookHook, 'id'>): WebhookHook;
  redeliver(idOrGuid: number | string): Delivery;
  /** Resolves once every event so far (pushes the forge reported included) is delivered or has failed for good. */
  deliveriesSettled(): Promise<void>;
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
  submitReview(owner: string, repo: string, number: number, review: NewReview): Promise<Review>;
  /** After a push made outside the forge: `synchronize` for every pull request whose head moved. */
  notePush(owner: string, repo: string, user?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startGitHubStandIn(options: GitHubStandInOptions = {}): Promise<GitHubStandIn> {
  const clock = standInClock();
  const store = new Store({
    ...(options.root ? { root: options.root } : {}),
    ...(options.repositories ? { repositories: options.repositories } : {}),
  });
  const login = options.login ?? 'tether-bot';
  const auth = new Auth({
    tokens: [...(options.token ? [options.token] : []), ...(options.tokens ?? [])],
    login,
    ...(options.app ? { app: options.app } : {}),
    clock,
    tokenLifetimeMs: options.tokenLifetimeMs ?? 3_600_000,
  });
  const webhooks = new Webhooks(options.webhooks);
  for (const hook of options.hooks ?? []) webhooks.add(hook);
  const ctx: StandInContext = { store, auth, clock, webhooks, apiUrl: '' };
  let queue: Promise<unknown> = Promise.resolve();
  let queued = 0;
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    queued += 1;
    const next = queue.then(work).finally(() => (queued -= 1));
    queue = next.catch(() => undefined);
    return next;
  };
  if (options.ci) runCi(ctx, options.ci, serial);
  const requests: ApiRequest[] = [];
  const injected: Injected = { status: 0, left: 0 };
  const server = createServer(handler(ctx, serial, requests, injected));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ctx.apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

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
  return {
    url: ctx.apiUrl,
    pulls: store.pulls,
    requests,
    deliveries: webhooks.deliveries,
    tokens: auth.tokens,
    clock,
    setTokenLifetime(ms) {
      auth.options.tokenLifetimeMs = ms;
    },
    failNext(status, n = 1) {
      Object.assign(injected, { status, left: n });
    },
    forgeHooks: {
      authorize: ({ repository: path, write, token }) => auth.gitAllows(token, store.repositoryAtPath(path), write),
      onPushed(path) {
        const repo = store.repositoryAtPath(path);
        if (repo) void serial(() => notePush(ctx, repo, login));
      },
    },
    addWebhook: (hook) => webhooks.add(hook),
    redeliver: (id) => webhooks.redeliver(id),
    async deliveriesSettled() {
      // Work may queue more work (a push's synchronize starts the CI): wait until none is left.
      do {
        await queue;
        await webhooks.idle();
      } while (queued > 0);
    },
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
      serial(async () => (await livePull(ctx, repository(owner, name), pull(owner, name, number))).headSha),
    createPull: (owner, name, input, user = login) =>
      serial(() => createPull(ctx, repository(owner, name), input, user)),
    closePull: (owner, name, number, user = login) =>
      serial(() => updatePull(ctx, repository(owner, name), pull(owner, name, number), { state: 'closed' }, user)),
    createCheckRun: (owner, name, input) => serial(() => createCheckRun(ctx, repository(owner, name), input)),
    updateCheckRun: (owner, name, id, change) =>
      serial(async () => {
        const repo = repository(owner, name);
        const run = store.checkRun(repo, id);
        if (!run) throw new Error(`no check run ${id} in ${owner}/${name}`);
        return updateCheckRun(ctx, repo, run, change);
      }),
    submitReview: (owner, name, number, review) =>
      serial(() => submitReview(ctx, repository(owner, name), pull(owner, name, number), review)),
    notePush: (owner, name, user = login) => serial(() => notePush(ctx, repository(owner, name), user)),
    close: () =>
      new Promise((resolve) => {
        webhooks.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
