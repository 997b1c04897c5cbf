import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { desiredStorePvc, storeClaimName } from '../../controller/store-claim.ts';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { DNS_LABEL_PATTERN } from '../../common/session/patterns.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';
import { fakeWorld } from './controller-fake-cluster.ts';

const session = testSession({ name: 'abc-20261122083000-k3x9', uid: 'uid-1' });
const claim = session.spec.workspace;

describe('desiredStorePvc', () => {
  it('builds the git store claim of a workspace whole, owned by nobody, sized and classed as workspaces are', () => {
    expect(desiredStorePvc(session, unitConfig({ pvc: { size: '20Gi', storageClass: 'fast' } }), claim)).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: `${claim}.git`,
        namespace: 'tether',
        labels: {
          'tether.dev/phone-hash': 'aa47515234d8f459',
          'tether.dev/workspace': claim,
          'app.kubernetes.io/component': 'git-store',
          'app.kubernetes.io/part-of': 'tether',
        },
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '20Gi' } }, storageClassName: 'fast' },
    });
    expect(desiredStorePvc(session, unitConfig(), claim).spec).not.toHaveProperty('storageClassName');
  });

  it('follows the claim the runner mounts (a legacy workspace keeps its own store)', () => {
    expect(desiredStorePvc(session, unitConfig(), 'ws-legacy0000000000').metadata!.name).toBe(
      'ws-legacy0000000000.git',
    );
  });

  it('can never name a workspace: not that of a repository called "git", nor "<repo>-git"', () => {
    const hash = 'aa47515234d8f459';
    for (const workspace of [workspaceName(hash), workspaceName(hash, 'app')]) {
      const store = storeClaimName(workspace);
      expect(new RegExp(DNS_LABEL_PATTERN).test(store)).toBe(false);
      expect([workspaceName(hash, 'git'), workspaceName(hash, 'app-git')]).not.toContain(store);
    }
  });
});

describe('the runner Pod and the git store', () => {
  const spec = desiredPod(session, unitConfig()).spec!;
  const [agent] = spec.initContainers!;
  const [runner] = spec.containers;
  const volume = (name: string) => spec.volumes!.find((v) => v.name === name);

  it("mounts the workspace's store claim at the store, in the runner container only", () => {
    expect(volume('git-store')).toEqual({ name: 'git-store', persistentVolumeClaim: { claimName: `${claim}.git` } });
    expect(runner!.volumeMounts).toContainEqual({ name: 'git-store', mountPath: '/var/lib/tether/git' });
    expect(agent!.volumeMounts!.map((m) => m.name)).not.toContain('git-store');
  });

  it("keeps the supervisor's HOME on the Pod's own emptyDir, over the store", () => {
    expect(volume('runner-home')).toEqual({ name: 'runner-home', emptyDir: {} });
    expect(runner!.env).toContainEqual({ name: 'HOME', value: '/var/lib/tether/git/home' });
    expect(runner!.volumeMounts).toContainEqual({ name: 'runner-home', mountPath: '/var/lib/tether/git/home' });
    expect(agent!.volumeMounts!.map((m) => m.name)).not.toContain('runner-home');
  });

  it('lists the workspace as the first claim (the local node gives a Pod the ids of its first claim)', () => {
    expect(spec.volumes!.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName).toBe(claim);
  });
});

describe('an admission and the git store', () => {
  const config = unitConfig({ runnerNamespace: 'runners' });
  const now = () => new Date('2026-11-22T09:00:00Z');
  const storeKey = (s: Session) => `runners/${s.spec.workspace}.git`;

  it("makes the workspace's store claim with the runner Pod, the claim the Pod mounts", async () => {
    const first = testSession({ name: 'a' });
    const world = fakeWorld(config, now, [first]);
    await world.pass(`${first.metadata.namespace}/a`);
    expect(world.cluster.pvcs.get(storeKey(first))).toMatchObject(desiredStorePvc(first, config, claim));
    const pod = world.cluster.pods.get(`runners/${runnerName('a')}`)!;
    expect(pod.spec!.volumes).toContainEqual({
      name: 'git-store',
      persistentVolumeClaim: { claimName: `${claim}.git` },
    });
  });
});
