// Check runs and the suite GitHub groups them in (one per head commit): a run created or completed
// is a `check_run` delivery; a suite whose runs have all completed is a `check_suite` completed
// delivery with the worst conclusion of the newest run of each name (a run again that passes makes
// it green). A new run on a completed suite opens it again.
import { emit, type StandInContext } from './context.ts';
import { validationFailed } from './http.ts';
import {
  suiteConclusion,
  type CheckConclusion,
  type CheckOutput,
  type CheckRun,
  type CheckStatus,
  type CheckSuite,
  type Repository,
} from './model.ts';
import { checkRunJson, checkSuiteJson, pullRefJson } from './payloads.ts';

export interface NewCheckRun {
  headSha: string;
  name: string;
  status?: CheckStatus;
  conclusion?: CheckConclusion;
  output?: CheckOutput;
  detailsUrl?: string;
  externalId?: string;
}

export interface CheckRunChange {
  status?: CheckStatus;
  conclusion?: CheckConclusion;
  output?: CheckOutput;
}

const CONCLUSIONS = ['success', 'failure', 'neutral', 'cancelled', 'skipped', 'timed_out', 'action_required', 'stale'];
const STATUSES = ['queued', 'in_progress', 'completed'];

const CI = 'stand-in-ci[bot]';

/** Open pull requests whose head is this commit, as check runs and suites list them. */
function pullsAt(ctx: StandInContext, repo: Repository, sha: string) {
  return ctx.store
    .pullsOf(repo)
    .filter((p) => p.state === 'open' && p.headSha === sha)
    .map((p) => pullRefJson(ctx, repo, p, sha));
}

export function runBody(ctx: StandInContext, repo: Repository, run: CheckRun) {
  const suite = ctx.store.checkSuites.find((s) => s.id === run.suiteId)!;
  return checkRunJson(ctx, run, suite, pullsAt(ctx, repo, run.headSha));
}

export function suiteBody(ctx: StandInContext, repo: Repository, suite: CheckSuite) {
  return checkSuiteJson(ctx, suite, pullsAt(ctx, repo, suite.headSha));
}

function validate(input: { status?: string; conclusion?: string }): void {
  if (input.status !== undefined && !STATUSES.includes(input.status))
    throw validationFailed([{ resource: 'CheckRun', field: 'status', code: 'invalid' }]);
  if (input.conclusion !== undefined && !CONCLUSIONS.includes(input.conclusion))
    throw validationFailed([{ resource: 'CheckRun', field: 'conclusion', code: 'invalid' }]);
  if (input.status === 'completed' && input.conclusion === undefined)
    throw validationFailed([{ resource: 'CheckRun', field: 'conclusion', code: 'missing_field' }]);
}

async function suiteFor(ctx: StandInContext, repo: Repository, headSha: string): Promise<CheckSuite> {
  const known = ctx.store.suite(repo, headSha);
  if (known) return known;
  const branch = ctx.store.pullsOf(repo).find((p) => p.headSha === headSha)?.head ?? null;
  const suite: CheckSuite = {
    ...ctx.store.stamp(repo),
    headSha,
    headBranch: branch,
    status: 'queued',
    conclusion: null,
  };
  ctx.store.checkSuites.push(suite);
  return suite;
}

export async function createCheckRun(ctx: StandInContext, repo: Repository, input: NewCheckRun): Promise<CheckRun> {
  const missing = (['name', 'headSha'] as const).filter((k) => typeof input[k] !== 'string' || !input[k]);
  if (missing.length)
    throw validationFailed(
      missing.map((k) => ({ resource: 'CheckRun', field: k === 'headSha' ? 'head_sha' : k, code: 'missing_field' })),
    );
  const status = input.conclusion ? 'completed' : (input.status ?? 'queued');
  validate({ status, conclusion: input.conclusion });
  if (repo.git && !(await repo.git.commitOf(input.headSha)))
    throw validationFailed([{ resource: 'CheckRun', field: 'head_sha', code: 'invalid' }]);
  const suite = await suiteFor(ctx, repo, input.headSha);
  const now = ctx.clock.now();
  const run: CheckRun = {
    ...ctx.store.stamp(repo),
    headSha: input.headSha,
    name: input.name,
    status,
    conclusion: input.conclusion ?? null,
    output: input.output ?? {},
    suiteId: suite.id,
    ...(input.detailsUrl ? { detailsUrl: input.detailsUrl } : {}),
    ...(input.externalId ? { externalId: input.externalId } : {}),
    startedAt: now,
    completedAt: status === 'completed' ? now : null,
  };
  ctx.store.checkRuns.push(run);
  emit(ctx, 'check_run', repo, CI, { action: 'created', check_run: runBody(ctx, repo, run) });
  if (status === 'completed')
    emit(ctx, 'check_run', repo, CI, { action: 'completed', check_run: runBody(ctx, repo, run) });
  settleSuite(ctx, repo, suite);
  return run;
}

export function updateCheckRun(ctx: StandInContext, repo: Repository, run: CheckRun, change: CheckRunChange): CheckRun {
  const status = change.conclusion ? 'completed' : (change.status ?? run.status);
  validate({
    status,
    conclusion: change.conclusion ?? (status === 'completed' ? (run.conclusion ?? undefined) : undefined),
  });
  const completing = status === 'completed' && run.status !== 'completed';
  run.status = status;
  if (change.conclusion) run.conclusion = change.conclusion;
  if (change.output) run.output = { ...run.output, ...change.output };
  if (completing) run.completedAt = ctx.clock.now();
  if (completing) emit(ctx, 'check_run', repo, CI, { action: 'completed', check_run: runBody(ctx, repo, run) });
  settleSuite(
    ctx,
    repo,
    ctx.store.checkSuites.find((s) => s.id === run.suiteId)!,
  );
  return run;
}

/** The suite's status from its runs; the moment all have completed, `check_suite` completed goes out. */
function settleSuite(ctx: StandInContext, repo: Repository, suite: CheckSuite): void {
  const runs = latestOfEachName(ctx.store.runsOfSuite(suite.id));
  const conclusion = suiteConclusion(runs);
  if (conclusion === null) {
    suite.status = runs.some((r) => r.status !== 'queued') ? 'in_progress' : 'queued';
    suite.conclusion = null;
    return;
  }
  if (suite.status === 'completed' && suite.conclusion === conclusion) return;
  suite.status = 'completed';
  suite.conclusion = conclusion;
  emit(ctx, 'check_suite', repo, CI, { action: 'completed', check_suite: suiteBody(ctx, repo, suite) });
}

/** The runs of a commit: the newest of each name unless `all` (GitHub's filter=latest|all). */
export function runsAt(ctx: StandInContext, repo: Repository, sha: string, all = false): CheckRun[] {
  const runs = ctx.store.checkRuns.filter((r) => r.owner === repo.owner && r.repo === repo.name && r.headSha === sha);
  return all ? runs : latestOfEachName(runs);
}

const latestOfEachName = (runs: CheckRun[]) =>
  runs.filter((run, i) => !runs.slice(i + 1).some((later) => later.name === run.name));
