// From an HTTP request to a route's answer: who calls (auth.ts), which route, the repository its
// path names and the permission it needs; errors as GitHub words them. One request at a time.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from './auth.ts';
import type { StandInContext } from './context.ts';
import { decoded, errorBody, HttpError, readJson, send, type Answer } from './http.ts';
import { appRoutes, repoRoutes } from './routes-app.ts';
import { checkRoutes } from './routes-checks.ts';
import { pullRoutes } from './routes-pulls.ts';
import { statusRoutes } from './routes-statuses.ts';
import type { Call, Route } from './route.ts';
import type { Repository } from './model.ts';
import type { RateLimits } from './rate-limit.ts';
import type { InTurn } from './serial.ts';

const REPO_ROUTES = [...repoRoutes, ...pullRoutes, ...checkRoutes, ...statusRoutes];

export interface ApiRequest {
  method: string;
  path: string;
  status: number;
  authorization?: string;
}

/** Lets a test turn the next answers of a route into failures (today: pull-request creations). */
export interface Injected {
  status: number;
  left: number;
}

function match(routes: Route[], method: string, path: string): { route: Route; params: string[] } | undefined {
  for (const route of routes) {
    const found = route.method === method && route.path.exec(path);
    if (found) return { route, params: found.slice(1) };
  }
  return undefined;
}

/** Whose hour a request counts against: its credentials. */
const rateKey = (req: IncomingMessage) => req.headers.authorization ?? 'anonymous';

async function answer(
  ctx: StandInContext,
  req: IncomingMessage,
  injected: Injected,
  limits: RateLimits,
): Promise<Answer> {
  const url = new URL(req.url ?? '/', 'http://stand-in');
  const method = req.method ?? 'GET';
  const path = url.pathname.replace(/\/+$/, '');
  const caller: Caller | { status: number; message: string } = ctx.auth.identify(req.headers.authorization);
  if ('status' in caller) throw new HttpError(caller.status, caller.message);
  limits.check(rateKey(req));
  const repoPath = /^\/repos\/([^/]+)\/([^/]+)(.*)$/.exec(path);
  const found = repoPath ? match(REPO_ROUTES, method, repoPath[3]!) : match(appRoutes, method, path);
  if (!found) throw new HttpError(404, 'Not Found');
  let repo: Repository | undefined;
  if (repoPath) {
    repo = ctx.store.repository(decoded(repoPath[1]!), decoded(repoPath[2]!));
    if (!repo) throw new HttpError(404, 'Not Found');
    const refused = ctx.auth.check(caller, repo, ...found.route.needs!);
    if (refused) throw new HttpError(refused.status, refused.message);
  } else if (found.route.app) {
    if (!ctx.auth.options.app) throw new HttpError(404, 'Not Found');
    if (caller.kind !== 'app') throw new HttpError(401, 'A JSON web token could not be decoded');
  }
  const body = ['POST', 'PUT', 'PATCH'].includes(method) ? await readJson(req) : {};
  if (method === 'POST' && repoPath?.[3] === '/pulls' && injected.left > 0) {
    injected.left -= 1;
    throw new HttpError(injected.status, 'injected failure');
  }
  const call: Call = {
    ctx,
    caller,
    params: found.params,
    query: url.searchParams,
    body,
    headers: req.headers,
    repo: repo!,
  };
  return found.route.handle(call);
}

export interface Handling {
  requests: ApiRequest[];
  injected: Injected;
  limits: RateLimits;
}

export function handler(ctx: StandInContext, inTurn: InTurn, { requests, injected, limits }: Handling) {
  return (req: IncomingMessage, res: ServerResponse) => {
    void inTurn(async () => {
      const rate = (status: number) => limits.headers(rateKey(req), status);
      let status: number;
      try {
        status = send(req, res, await answer(ctx, req, injected, limits), rate);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        status = send(req, res, { status: error.status, body: errorBody(error) }, rate);
      }
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        status,
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      });
    }).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: (error as Error).message }));
    });
  };
}
