// /repos/{owner}/{repo}/check-runs, check-suites and commits/{ref}/check-runs|check-suites.
import { createCheckRun, runBody, runsAt, suiteBody, updateCheckRun } from './checks.ts';
import { decoded, HttpError } from './http.ts';
import type { CheckConclusion, CheckOutput, CheckStatus } from './model.ts';
import { ok, text, type Call, type Route } from './route.ts';

const read: [string, 'read'] = ['checks', 'read'];
const write: [string, 'write'] = ['checks', 'write'];

function runOf(call: Call) {
  const run = call.ctx.store.checkRun(call.repo, Number(call.params[0]));
  if (!run) throw new HttpError(404, 'Not Found');
  return run;
}

/** The commit a ref (sha, branch) names; 422 as GitHub's "No commit found" when there is none. */
export async function commitOf(call: Call): Promise<string> {
  const ref = decoded(call.params[0]!);
  const sha = call.repo.git ? await call.repo.git.commitOf(ref) : /^[0-9a-f]{40}$/.test(ref) ? ref : undefined;
  if (!sha) throw new HttpError(422, `No commit found for SHA: ${ref}`);
  return sha;
}

const output = (value: unknown): CheckOutput | undefined =>
  typeof value === 'object' && value !== null ? (value as CheckOutput) : undefined;

export const checkRoutes: Route[] = [
  {
    method: 'POST',
    path: /^\/check-runs$/,
    needs: write,
    async handle(call) {
      const b = call.body;
      const out = output(b.output);
      const run = await createCheckRun(call.ctx, call.repo, {
        name: text(b.name, 'name', 'CheckRun'),
        headSha: text(b.head_sha, 'head_sha', 'CheckRun'),
        ...(typeof b.status === 'string' ? { status: b.status as CheckStatus } : {}),
        ...(typeof b.conclusion === 'string' ? { conclusion: b.conclusion as CheckConclusion } : {}),
        ...(out ? { output: out } : {}),
        ...(typeof b.details_url === 'string' ? { detailsUrl: b.details_url } : {}),
        ...(typeof b.external_id === 'string' ? { externalId: b.external_id } : {}),
      });
      return ok(runBody(call.ctx, call.repo, run), 201);
    },
  },
  {
    method: 'GET',
    path: /^\/check-runs\/(\d+)$/,
    needs: read,
    handle: (call) => ok(runBody(call.ctx, call.repo, runOf(call))),
  },
  {
    method: 'PATCH',
    path: /^\/check-runs\/(\d+)$/,
    needs: write,
    handle(call) {
      const b = call.body;
      const out = output(b.output);
      const run = updateCheckRun(call.ctx, call.repo, runOf(call), {
        ...(typeof b.status === 'string' ? { status: b.status as CheckStatus } : {}),
        ...(typeof b.conclusion === 'string' ? { conclusion: b.conclusion as CheckConclusion } : {}),
        ...(out ? { output: out } : {}),
      });
      return ok(runBody(call.ctx, call.repo, run));
    },
  },
  {
    method: 'GET',
    path: /^\/commits\/(.+)\/check-runs$/,
    needs: read,
    async handle(call) {
      const sha = await commitOf(call);
      const name = call.query.get('check_name');
      const status = call.query.get('status');
      const runs = runsAt(call.ctx, call.repo, sha, call.query.get('filter') === 'all')
        .filter((r) => (!name || r.name === name) && (!status || r.status === status))
        .map((r) => runBody(call.ctx, call.repo, r));
      return ok({ total_count: runs.length, check_runs: runs });
    },
  },
  {
    method: 'GET',
    path: /^\/check-suites\/(\d+)$/,
    needs: read,
    handle(call) {
      const suite = call.ctx.store.checkSuites.find(
        (s) => s.id === Number(call.params[0]) && s.owner === call.repo.owner && s.repo === call.repo.name,
      );
      if (!suite) throw new HttpError(404, 'Not Found');
      return ok(suiteBody(call.ctx, call.repo, suite));
    },
  },
  {
    method: 'GET',
    path: /^\/commits\/(.+)\/check-suites$/,
    needs: read,
    async handle(call) {
      const suite = call.ctx.store.suite(call.repo, await commitOf(call));
      const suites = suite ? [suiteBody(call.ctx, call.repo, suite)] : [];
      return ok({ total_count: suites.length, check_suites: suites });
    },
  },
];
