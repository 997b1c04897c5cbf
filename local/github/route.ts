// A route of the stand-in's REST API: what it matches, the permission it needs on the repository
// its path names (an installation token must carry it), and its handler.
import type { IncomingHttpHeaders } from 'node:http';
import type { Caller } from './auth.ts';
import type { StandInContext } from './context.ts';
import { HttpError, type Answer } from './http.ts';
import type { Permission, RecordedPull, Repository } from './model.ts';

export interface Call {
  ctx: StandInContext;
  caller: Caller;
  /** The path's captures after owner and repo. */
  params: string[];
  query: URLSearchParams;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** The repository a /repos/{owner}/{repo}/… path names. */
  repo: Repository;
}

export interface Route {
  method: string;
  /** Matched against the path after /repos/{owner}/{repo} for repository routes, the whole path otherwise. */
  path: RegExp;
  /** Repository routes: the permission an installation token needs. */
  needs?: [string, Permission];
  /** Routes only the App's JWT may call. */
  app?: boolean;
  handle(call: Call): Promise<Answer> | Answer;
}

export const ok = (body: unknown, status = 200): Answer => ({ status, body });

export function pullOf(call: Call, index = 0): RecordedPull {
  const pull = call.ctx.store.pull(call.repo, Number(call.params[index]));
  if (!pull) throw new HttpError(404, 'Not Found');
  return pull;
}

/** GitHub's paging: per_page (default 30, at most 100) and page, with a Link header to the next page. */
export function paged<T>(call: Call, items: T[], path: string): Answer & { body: T[] } {
  const perPage = Math.min(Math.max(Number(call.query.get('per_page')) || 30, 1), 100);
  const page = Math.max(Number(call.query.get('page')) || 1, 1);
  const body = items.slice((page - 1) * perPage, page * perPage);
  const more = items.length > page * perPage;
  return {
    status: 200,
    body,
    ...(more
      ? { headers: { link: `<${call.ctx.apiUrl}${path}?per_page=${perPage}&page=${page + 1}>; rel="next"` } }
      : {}),
  };
}

export const text = (value: unknown, field: string, resource: string): string => {
  if (typeof value !== 'string' || !value)
    throw new HttpError(422, 'Validation Failed', [{ resource, field, code: 'missing_field' }]);
  return value;
};
