// What every part of the stand-in shares, and how an event becomes a webhook delivery
// (repository, sender and — when the App is installed on the repository — installation).
import type { Auth } from './auth.ts';
import type { StandInClock } from './clock.ts';
import type { Repository } from './model.ts';
import { repoJson, userJson, type PayloadContext } from './payloads.ts';
import type { Webhooks } from './webhooks.ts';

export interface StandInContext extends PayloadContext {
  webhooks: Webhooks;
  auth: Auth;
  clock: StandInClock;
}

export function emit(
  ctx: StandInContext,
  event: string,
  repo: Repository,
  sender: string,
  body: Record<string, unknown>,
): void {
  const installation = ctx.auth.options.app?.installations.find(
    (i) =>
      i.account.toLowerCase() === repo.owner.toLowerCase() && (!i.repositories || i.repositories.includes(repo.name)),
  );
  ctx.webhooks.emit(event, {
    ...body,
    repository: repoJson(ctx, repo),
    sender: userJson(ctx, sender),
    ...(installation ? { installation: { id: installation.id } } : {}),
  });
}
