// RBAC of the installed chart, checked by impersonating each ServiceAccount on the real API
// server: exactly the intended permissions, nothing else, no Secrets, nothing outside the
// release namespace; and the controller can hand a runner its (narrower) Role.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desiredRbac } from '../../controller/builders.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd, sessionClient } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { helmBin } from '../unit/chart-render.ts';
import { canI, extraPermissions, helmRelease, kubectlOk, kubectlResult, manifestFile } from './chart-cluster.ts';

let kc: KubeConfig;
let ns: string;
let other: string;
const CONTROLLER = 'tether-controller';
const RELAY = 'tether-relay';

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  [ns, other] = await Promise.all([createNamespace(kc, 'rbac'), createNamespace(kc, 'rbac-other')]);
  await helmRelease('install', 'tether', ns, {});
}, 900_000);
afterAll(async () => {
  await kubectlResult(['delete', 'clusterrole,clusterrolebinding', `${ns}-tether-relay`, '--ignore-not-found']);
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, other)]);
});

describe('controller ServiceAccount', () => {
  it('has exactly the intended permissions in its namespace', async () => {
    expect(await extraPermissions(CONTROLLER, ns)).toEqual([
      'events.events.k8s.io [] create',
      'leases.coordination.k8s.io [] create get update',
      'persistentvolumeclaims [] create get list watch',
      'pods [] create delete get list watch',
      'rolebindings.rbac.authorization.k8s.io [] create get',
      'roles.rbac.authorization.k8s.io [] create get',
      'serviceaccounts [] create get',
      'sessions.tether.dev [] delete get list watch',
      'sessions.tether.dev/finalizers [] update',
      'sessions.tether.dev/status [] get patch update',
    ]);
  });

  it('has nothing in other namespaces', async () => {
    expect(await extraPermissions(CONTROLLER, ns, other)).toEqual([]);
    expect(await canI(CONTROLLER, ns, ['create', 'pods', '-n', other])).toBe(false);
  });

  it('can grant a runner its Role only because it holds those verbs (escalation check)', async () => {
    const phone = '+14155550123';
    // A real owner: objects owned by a Session that does not exist are deleted by the garbage collector.
    const session = await sessionClient(kc).create(ns, sessionName(phone), {
      phone, prompt: 'hi', repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' }, workspace: workspaceName(phone),
    });
    const { serviceAccount, role, roleBinding } = desiredRbac(session);
    const as = `--as=system:serviceaccount:${ns}:${CONTROLLER}`;
    await kubectlOk(['create', as, '-f', manifestFile([serviceAccount, role])]);
    // The binding's escalation check reads the new Role from the API server's RBAC cache, which
    // may lag a moment behind (the controller retries the same way).
    const binding = manifestFile([roleBinding]);
    await eventually(async () => expect((await kubectlResult(['create', as, '-f', binding])).stderr).toBe(''), 10_000, 200);
    const runner = serviceAccount.metadata!.name!;
    expect(await canI(runner, ns, ['get', `sessions.tether.dev/${session.metadata.name}`, '-n', ns])).toBe(true);
    expect(await canI(runner, ns, ['patch', `sessions.tether.dev/${session.metadata.name}`, '--subresource=status', '-n', ns])).toBe(true);
    expect(await canI(runner, ns, ['patch', 'sessions.tether.dev/someone-else', '--subresource=status', '-n', ns])).toBe(false);
    expect(await canI(runner, ns, ['patch', `sessions.tether.dev/${session.metadata.name}`, '-n', ns])).toBe(false);

    // A Role with a verb the controller lacks is refused: it cannot widen anyone's rights.
    const wider = { ...role, metadata: { ...role.metadata, name: 'wider', ownerReferences: undefined }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] };
    const refused = await kubectlResult(['create', as, '-f', manifestFile([wider])]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('attempting to grant RBAC permissions not currently held');
  });
});

describe('relay ServiceAccount', () => {
  it('has exactly the intended permissions in its namespace', async () => {
    expect(await extraPermissions(RELAY, ns)).toEqual([
      'configmaps [tether-relay-claims] get update',
      'sessions.tether.dev [] create get list patch watch',
      'tokenreviews.authentication.k8s.io [] create',
    ]);
  });

  it('has only TokenReviews (cluster-wide) outside it', async () => {
    expect(await extraPermissions(RELAY, ns, other)).toEqual(['tokenreviews.authentication.k8s.io [] create']);
  });

  it('cannot write status or delete Sessions', async () => {
    expect(await canI(RELAY, ns, ['patch', 'sessions.tether.dev', '--subresource=status', '-n', ns])).toBe(false);
    expect(await canI(RELAY, ns, ['delete', 'sessions.tether.dev', '-n', ns])).toBe(false);
  });
});

describe('nobody reads Secrets', () => {
  it.each([[CONTROLLER], [RELAY]])('%s cannot get, list or watch Secrets anywhere', async (sa) => {
    for (const verb of ['get', 'list', 'watch']) {
      expect(await canI(sa, ns, [verb, 'secrets', '-n', ns]), `${verb} in ${ns}`).toBe(false);
      expect(await canI(sa, ns, [verb, 'secrets', '--all-namespaces']), `${verb} cluster-wide`).toBe(false);
    }
  });

  it('no Role or ClusterRole of the chart uses a wildcard', async () => {
    const roles = JSON.parse((await kubectlOk(['get', 'roles', '-n', ns, '-l', 'app.kubernetes.io/instance=tether', '-o', 'json'])).stdout) as { items: { rules: object[] }[] };
    const clusterRole = JSON.parse((await kubectlOk(['get', 'clusterrole', `${ns}-tether-relay`, '-o', 'json'])).stdout) as { rules: object[] };
    const rules = [...roles.items, clusterRole].flatMap((r) => r.rules);
    expect(rules.length).toBeGreaterThan(5);
    expect(JSON.stringify(rules)).not.toContain('*');
  });
});
