// A stand-in for GitHub, built from its REST and webhook documentation, for tests and `make dev`:
// pull requests on the bare repositories the local forge serves, check runs and suites, commit
// statuses, reviews, merges done with git, an App's JWT and installation tokens (scopes and expiry
// enforced on REST and — through the forge's authorize hook — on git), ETags, and signed webhook
// deliveries with retries and redeliveries. Loopback only.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Auth, type AppConfig, type InstallationToken } from './auth.ts';
import { runCi, type StandInCi } from './ci.ts';
import { standInClock, type StandInClock } from './clock.ts';
import type { StandInContext } from './context.ts';
import type { RecordedPull } from './model.ts';
import { notePush } from './pulls.ts';
import { handler, type ApiRequest, type Injected } from './router.ts';
import { sceneOf, type Scene } from './scene.ts';
import { RateLimits } from './rate-limit.ts';
import { Serial } from './serial.ts';
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
  /** Requests an hour per token (default 5000, GitHub's); a 304 costs nothing. */
  rateLimit?: number;
}

/** What the forge (local/git-forge.ts) asks the stand-in: may this token fetch or push here, and a push happened. */
export interface ForgeHooks {
  authorize(access: { repository: string; write: boolean; token?: string }): boolean;
  onPushed(repository: string, token?: string): void;
}

export interface GitHubStandIn extends Scene {
  /** Base URL to use as GITHUB_API_URL. */
  url: string;
  /** Every pull request, in creation order. */
  pulls: RecordedPull[];
  /** Every REST request answered, with its status (304s included). */
  requests: ApiRequest[];
  /** Every webhook delivery, with its attempts. */
  deliveries: Delivery[];
  /** The webhook targets. */
  hooks: WebhookHook[];
  /** Installation tokens minted so far. */
  tokens: InstallationToken[];
  clock: StandInClock;
  /** An installation token's life from now on. */
  setTokenLifetime(ms: number): void;
  /** Requests an hour per token from now on (X-RateLimit-*; 403 once spent). */
  setRateLimit(limit: number): void;
  /** Makes the next n pull-request creations fail with this status. */
  failNext(status: number, n?: number): void;
  forgeHooks: ForgeHooks;
  addWebhook(hook: Omit<WebhookHook, 'id'>): WebhookHook;
  redeliver(idOrGuid: number | string): Delivery;
  /** Resolves once every event so far (pushes the forge reported included) is delivered or has failed for good. */
  deliveriesSettled(): Promise<void>;
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
  const serial = new Serial();
  const inTurn = serial.run.bind(serial);
  if (options.ci) runCi(ctx, options.ci, inTurn);
  const requests: ApiRequest[] = [];
  const injected: Injected = { status: 0, left: 0 };
  const limits = new RateLimits(options.rateLimit ?? 5000, clock);
  const server = createServer(handler(ctx, inTurn, { requests, injected, limits }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ctx.apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    ...sceneOf(ctx, serial, login),
    url: ctx.apiUrl,
    pulls: store.pulls,
    requests,
    deliveries: webhooks.deliveries,
    hooks: webhooks.hooks,
    tokens: auth.tokens,
    clock,
    setTokenLifetime(ms) {
      auth.options.tokenLifetimeMs = ms;
    },
    setRateLimit(limit) {
      limits.limit = limit;
    },
    failNext(status, n = 1) {
      Object.assign(injected, { status, left: n });
    },
    forgeHooks: {
      authorize: ({ repository: path, write, token }) => auth.gitAllows(token, store.repositoryAtPath(path), write),
      onPushed(path, token) {
        const repo = store.repositoryAtPath(path);
        const pusher = auth.identify(token ? `Bearer ${token}` : undefined);
        if (repo) void inTurn(() => notePush(ctx, repo, 'login' in pusher ? pusher.login : login));
      },
    },
    addWebhook: (hook) => webhooks.add(hook),
    redeliver: (id) => webhooks.redeliver(id),
    deliveriesSettled: () => serial.drained(() => webhooks.idle()),
    close: () =>
      new Promise((resolve) => {
        webhooks.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
