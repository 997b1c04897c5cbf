// /repos/{owner}/{repo}/pulls…: pull requests, their merge, requested reviewers, reviews and review comments.
import { HttpError } from './http.ts';
import { reviewCommentJson, reviewJson, userJson } from './payloads.ts';
import { announce, createPull, mergePull, pullBody, updatePull } from './pulls.ts';
import { submitReview } from './reviews.ts';
import { ok, paged, pullOf, text, type Call, type Route } from './route.ts';
import type { RecordedPull } from './model.ts';

const read: [string, 'read'] = ['pull_requests', 'read'];
const write: [string, 'write'] = ['pull_requests', 'write'];

async function listPulls(call: Call) {
  const state = call.query.get('state') ?? 'open';
  const head = call.query.get('head');
  const base = call.query.get('base');
  const pulls = call.ctx.store
    .pullsOf(call.repo)
    .filter((p) => state === 'all' || p.state === state)
    .filter((p) => !head || `${call.repo.owner}:${p.head}` === head || p.head === head)
    .filter((p) => !base || p.base === base)
    .reverse();
  const page = paged(call, pulls, `/repos/${call.repo.owner}/${call.repo.name}/pulls`);
  return { ...page, body: await Promise.all(page.body.map((p) => pullBody(call.ctx, call.repo, p))) };
}

function reviewers(call: Call, pull: RecordedPull): string[] {
  const asked = call.body.reviewers;
  if (!Array.isArray(asked) || asked.some((r) => typeof r !== 'string'))
    throw new HttpError(422, 'Validation Failed', [{ resource: 'PullRequest', field: 'reviewers', code: 'invalid' }]);
  const logins = asked as string[];
  if (logins.includes(pull.user)) throw new HttpError(422, 'Review cannot be requested from pull request author.');
  const collaborators = call.repo.collaborators;
  if (collaborators && logins.some((l) => !collaborators.includes(l)))
    throw new HttpError(
      422,
      'Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a ' +
        `collaborator of the ${call.repo.owner}/${call.repo.name} repository.`,
    );
  return logins;
}

function reviewOf(call: Call, pull: RecordedPull) {
  const review = call.ctx.store.reviewsOf(pull).find((r) => r.id === Number(call.params[1]));
  if (!review) throw new HttpError(404, 'Not Found');
  return review;
}

export const pullRoutes: Route[] = [
  { method: 'GET', path: /^\/pulls$/, needs: read, handle: listPulls },
  {
    method: 'POST',
    path: /^\/pulls$/,
    needs: write,
    async handle(call) {
      const input = {
        title: text(call.body.title, 'title', 'PullRequest'),
        head: text(call.body.head, 'head', 'PullRequest'),
        base: text(call.body.base, 'base', 'PullRequest'),
        body: typeof call.body.body === 'string' ? call.body.body : '',
        draft: call.body.draft === true,
      };
      const pull = await createPull(call.ctx, call.repo, input, call.caller.login, call.headers);
      return ok(await pullBody(call.ctx, call.repo, pull), 201);
    },
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)$/,
    needs: read,
    handle: async (call) => ok(await pullBody(call.ctx, call.repo, pullOf(call), true)),
  },
  {
    method: 'PATCH',
    path: /^\/pulls\/(\d+)$/,
    needs: write,
    async handle(call) {
      const pull = pullOf(call);
      const { state, title, body } = call.body;
      if (state !== undefined && state !== 'open' && state !== 'closed')
        throw new HttpError(422, 'Validation Failed', [{ resource: 'PullRequest', field: 'state', code: 'invalid' }]);
      await updatePull(
        call.ctx,
        call.repo,
        pull,
        {
          ...(state ? { state } : {}),
          ...(typeof title === 'string' ? { title } : {}),
          ...(typeof body === 'string' ? { body } : {}),
        },
        call.caller.login,
      );
      return ok(await pullBody(call.ctx, call.repo, pull));
    },
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)\/merge$/,
    needs: read,
    handle: (call) => (pullOf(call).merged ? { status: 204 } : { status: 404, body: { message: 'Not Found' } }),
  },
  {
    method: 'PUT',
    path: /^\/pulls\/(\d+)\/merge$/,
    needs: ['contents', 'write'],
    async handle(call) {
      const b = call.body;
      const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
      const request = {
        ...(str(b.sha) ? { sha: str(b.sha) } : {}),
        ...(str(b.merge_method) ? { merge_method: str(b.merge_method) } : {}),
        ...(str(b.commit_title) ? { commit_title: str(b.commit_title) } : {}),
        ...(str(b.commit_message) ? { commit_message: str(b.commit_message) } : {}),
      };
      return ok(await mergePull(call.ctx, call.repo, pullOf(call), request, call.caller.login));
    },
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)\/requested_reviewers$/,
    needs: read,
    handle: (call) => ok({ users: pullOf(call).requestedReviewers.map((l) => userJson(call.ctx, l)), teams: [] }),
  },
  {
    method: 'POST',
    path: /^\/pulls\/(\d+)\/requested_reviewers$/,
    needs: write,
    async handle(call) {
      const pull = pullOf(call);
      const logins = reviewers(call, pull);
      const added = logins.filter((l) => !pull.requestedReviewers.includes(l));
      pull.requestedReviewers.push(...added);
      for (const login of added) {
        await announce(call.ctx, call.repo, pull, 'review_requested', call.caller.login, {
          requested_reviewer: userJson(call.ctx, login),
        });
      }
      return ok(await pullBody(call.ctx, call.repo, pull), 201);
    },
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)\/reviews$/,
    needs: read,
    handle: (call) =>
      paged(
        call,
        call.ctx.store.reviewsOf(pullOf(call)).map((r) => reviewJson(call.ctx, r)),
        `/repos/${call.repo.owner}/${call.repo.name}/pulls/${call.params[0]}/reviews`,
      ),
  },
  {
    method: 'POST',
    path: /^\/pulls\/(\d+)\/reviews$/,
    needs: write,
    async handle(call) {
      const pull = pullOf(call);
      const comments = Array.isArray(call.body.comments)
        ? (call.body.comments as { path: string; body: string }[])
        : [];
      const review = await submitReview(call.ctx, call.repo, pull, {
        user: call.caller.login,
        state: text(call.body.event, 'event', 'PullRequestReview'),
        ...(typeof call.body.body === 'string' ? { body: call.body.body } : {}),
        comments,
        ...(typeof call.body.commit_id === 'string' ? { commitId: call.body.commit_id } : {}),
      });
      return ok(reviewJson(call.ctx, review));
    },
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)\/reviews\/(\d+)$/,
    needs: read,
    handle: (call) => ok(reviewJson(call.ctx, reviewOf(call, pullOf(call)))),
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)\/reviews\/(\d+)\/comments$/,
    needs: read,
    handle(call) {
      const pull = pullOf(call);
      const review = reviewOf(call, pull);
      const comments = call.ctx.store.commentsOf(pull, review.id).map((c) => reviewCommentJson(call.ctx, c));
      return paged(
        call,
        comments,
        `/repos/${call.repo.owner}/${call.repo.name}/pulls/${pull.number}/reviews/${review.id}/comments`,
      );
    },
  },
  {
    method: 'GET',
    path: /^\/pulls\/(\d+)\/comments$/,
    needs: read,
    handle(call) {
      const pull = pullOf(call);
      const comments = call.ctx.store.commentsOf(pull).map((c) => reviewCommentJson(call.ctx, c));
      return paged(call, comments, `/repos/${call.repo.owner}/${call.repo.name}/pulls/${pull.number}/comments`);
    },
  },
];
