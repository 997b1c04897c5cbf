// /repos/{owner}/{repo}/statuses/{sha} and commits/{ref}/status (GitHub's Statuses API).
import { decoded } from './http.ts';
import type { CommitState } from './model.ts';
import { ok, paged, text, type Route } from './route.ts';
import { commitOf } from './routes-checks.ts';
import { combinedJson, createStatus, latestStatuses, statusJson } from './statuses.ts';

const optional = (value: unknown) => (typeof value === 'string' ? value : undefined);

export const statusRoutes: Route[] = [
  {
    method: 'POST',
    path: /^\/statuses\/([^/]+)$/,
    needs: ['statuses', 'write'],
    async handle(call) {
      const b = call.body;
      const status = await createStatus(
        call.ctx,
        call.repo,
        decoded(call.params[0]!),
        {
          state: text(b.state, 'state', 'Status') as CommitState,
          ...(optional(b.context) ? { context: optional(b.context) } : {}),
          ...(optional(b.description) ? { description: optional(b.description) } : {}),
          ...(optional(b.target_url) ? { targetUrl: optional(b.target_url) } : {}),
        },
        call.caller.login,
      );
      return ok(statusJson(call.ctx, status), 201);
    },
  },
  {
    method: 'GET',
    path: /^\/commits\/(.+)\/status$/,
    needs: ['statuses', 'read'],
    async handle(call) {
      const sha = await commitOf(call);
      const all = latestStatuses(call.ctx, call.repo, sha);
      const path = `/repos/${call.repo.owner}/${call.repo.name}/commits/${sha}/status`;
      const page = paged(call, all, path);
      return { ...page, body: combinedJson(call.ctx, call.repo, sha, page.body, all) };
    },
  },
];
