// The App's routes (its JWT: /app, its installations, installation tokens), an installation
// token's /installation/repositories, the repository itself, and its hook deliveries.
import { tokenJson, type InstallationConfig } from './auth.ts';
import { HttpError } from './http.ts';
import type { Permissions } from './model.ts';
import { repoJson, userJson } from './payloads.ts';
import { ok, type Call, type Route } from './route.ts';
import type { Delivery } from './webhooks.ts';

function installationOf(call: Call): InstallationConfig {
  const installation = call.ctx.auth.installation(Number(call.params[0]));
  if (!installation) throw new HttpError(404, 'Not Found');
  return installation;
}

const installationJson = (call: Call, i: InstallationConfig) => ({
  id: i.id,
  account: userJson(call.ctx, i.account),
  app_id: call.ctx.auth.options.app!.id,
  repository_selection: i.repositories ? 'selected' : 'all',
  permissions: i.permissions ?? {},
});

function accessTokenRequest(call: Call): { repositories?: string[]; permissions?: Permissions } {
  const { repositories, repository_ids: ids, permissions } = call.body;
  const names = [
    ...(Array.isArray(repositories) ? repositories.map(String) : []),
    ...(Array.isArray(ids)
      ? ids.map((id) => {
          const repo = [...call.ctx.store.repositories.values()].find((r) => r.id === Number(id));
          if (!repo)
            throw new HttpError(
              422,
              'There is at least one repository that does not exist or is not accessible to the parent installation.',
            );
          return repo.name;
        })
      : []),
  ];
  return {
    ...(names.length ? { repositories: names } : {}),
    ...(typeof permissions === 'object' && permissions !== null ? { permissions: permissions as Permissions } : {}),
  };
}

const deliveryJson = (d: Delivery) => ({
  id: d.id,
  guid: d.guid,
  delivered_at: d.attempts.at(-1) ? new Date(d.attempts.at(-1)!.at).toISOString() : null,
  redelivery: d.redelivery,
  status: d.state === 'delivered' ? 'OK' : d.state === 'pending' ? 'pending' : 'failed',
  status_code: d.statusCode ?? 0,
  event: d.event,
  action: d.action ?? null,
  repository_id: (d.payload.repository as { id?: number } | undefined)?.id ?? null,
});

function deliveriesOf(call: Call): Delivery[] {
  return call.ctx.webhooks.deliveries.filter(
    (d) => d.hookId === Number(call.params[0]) && deliveryJson(d).repository_id === call.repo.id,
  );
}

export const appRoutes: Route[] = [
  {
    method: 'GET',
    path: /^\/app$/,
    app: true,
    handle: (call) => ok({ id: call.ctx.auth.options.app!.id, slug: call.ctx.auth.appLogin.replace('[bot]', '') }),
  },
  {
    method: 'GET',
    path: /^\/app\/installations$/,
    app: true,
    handle: (call) => ok(call.ctx.auth.options.app!.installations.map((i) => installationJson(call, i))),
  },
  {
    method: 'GET',
    path: /^\/app\/installations\/(\d+)$/,
    app: true,
    handle: (call) => ok(installationJson(call, installationOf(call))),
  },
  {
    method: 'POST',
    path: /^\/app\/installations\/(\d+)\/access_tokens$/,
    app: true,
    handle(call) {
      const minted = call.ctx.auth.mint(installationOf(call), accessTokenRequest(call));
      if ('status' in minted) throw new HttpError(minted.status, minted.message);
      const repos = minted.repositories?.map((name) => {
        const repo = call.ctx.store.repository(minted.account, name);
        return repo ? repoJson(call.ctx, repo) : { name };
      });
      return ok(tokenJson(minted, repos), 201);
    },
  },
  {
    method: 'GET',
    path: /^\/installation\/repositories$/,
    handle(call) {
      if (call.caller.kind !== 'installation') throw new HttpError(403, 'This endpoint needs an installation token');
      const grant = call.caller.grant;
      const names = grant.repositories ?? call.ctx.auth.installation(grant.installationId)?.repositories ?? [];
      const repos = names.flatMap((n) => {
        const repo = call.ctx.store.repository(grant.account, n);
        return repo ? [repoJson(call.ctx, repo)] : [];
      });
      return ok({ total_count: repos.length, repositories: repos });
    },
  },
];

export const repoRoutes: Route[] = [
  { method: 'GET', path: /^$/, needs: ['metadata', 'read'], handle: (call) => ok(repoJson(call.ctx, call.repo)) },
  {
    method: 'GET',
    path: /^\/hooks\/(\d+)\/deliveries$/,
    needs: ['repository_hooks', 'read'],
    handle: (call) => ok(deliveriesOf(call).reverse().map(deliveryJson)),
  },
  {
    method: 'POST',
    path: /^\/hooks\/(\d+)\/deliveries\/(\d+)\/attempts$/,
    needs: ['repository_hooks', 'write'],
    handle(call) {
      const delivery = deliveriesOf(call).find((d) => d.id === Number(call.params[1]));
      if (!delivery) throw new HttpError(404, 'Not Found');
      call.ctx.webhooks.redeliver(delivery.id);
      return ok({}, 202);
    },
  },
];
