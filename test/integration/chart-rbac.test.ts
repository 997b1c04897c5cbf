// RBAC of the installed chart, checked by impersonating each ServiceAccount on the real API
// server: exactly the intended permissions, nothing else, no Secrets, nothing outside the
// release and runner namespaces; the controller can hand a phone's runner its (narrower) Role;
// and the admission policy refuses the controller any Pod but a runner's.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { desiredIdentity } from '../../controller/identity.ts';
import { loadConfig, type ControllerConfig } from '../../controller/config.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import {
  adminKubeConfig,
  createNamespace,
  deleteNamespace,
  installSessionCrd,
  sessionClient,
} from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { helmBin } from '../unit/chart-render.ts';
import {
  canI,
  createPodAsController,
  deleteClusterScoped,
  extraPermissions,
  helmRelease,
  installedControllerEnv,
  kubectlOk,
  kubectlResult,
  manifestFile,
  unstoredSession,
} from './chart-cluster.ts';
import { TEST_PHONE_HASH_KEY, testPhoneHash } from '../support/phone-hash.ts';

let kc: KubeConfig;
let ns: string;
let runners: string;
let other: string;
let config: ControllerConfig;
const CONTROLLER = 'tether-controller';
const RELAY = 'tether-relay';

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  [ns, other] = await Promise.all([createNamespace(kc, 'rbac'), createNamespace(kc, 'rbac-other')]);
  // The test's admin creates a Session below: its group may (sessions.creators, chart-session-policy.test.ts).
  // The key the test's own Sessions are named by (test/support/phone-hash.ts).
  await helmRelease('install', 'tether', ns, {
    sessions: { creators: { groups: ['system:masters'] } },
    secrets: { relay: { phoneHashKey: TEST_PHONE_HASH_KEY } },
  });
  runners = `${ns}-runners`;
  // The controller's own configuration, as the chart gives it.
  config = loadConfig(await installedControllerEnv(ns));
}, 900_000);
afterAll(async () => {
  await deleteClusterScoped([ns]);
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners), deleteNamespace(kc, other)]);
});

/** The controller's one cluster-wide right: reading the Session CRD's schema version at start. */
const CRD_GET = 'customresourcedefinitions.apiextensions.k8s.io [sessions.tether.dev] get';

describe('controller ServiceAccount', () => {
  it('has exactly the intended permissions in the release namespace and in the runner namespace', async () => {
    expect(config.runnerNamespace).toBe(runners);
    expect(await extraPermissions(CONTROLLER, ns)).toEqual([
      CRD_GET,
      'events.events.k8s.io [] create',
      'leases.coordination.k8s.io [] create get update',
      'rolebindings.rbac.authorization.k8s.io [] create list watch',
      'roles.rbac.authorization.k8s.io [] create get list patch watch',
      // The relay's and the egress proxy's Services, by name: runner Pods' hostAliases (egress on).
      'services [tether-egress] get watch',
      'services [tether-relay] get watch',
      'sessions.tether.dev [] delete get list watch',
      'sessions.tether.dev/finalizers [] update',
      'sessions.tether.dev/status [] get patch update',
    ]);
    expect(await canI(CONTROLLER, ns, ['list', 'services', '-n', ns])).toBe(false);
    expect(await canI(CONTROLLER, ns, ['get', 'services/tether-other', '-n', ns])).toBe(false);
    expect(await extraPermissions(CONTROLLER, ns, runners)).toEqual([
      CRD_GET,
      'persistentvolumeclaims [] create get list watch',
      'pods [] create delete get list watch',
      // Each runner Pod's own egress Secret (<pod>-egress), written and never read.
      'secrets [] create update',
      'serviceaccounts [] create',
    ]);
    for (const verb of ['get', 'list', 'watch'])
      expect(await canI(CONTROLLER, ns, [verb, 'secrets', '-n', runners]), verb).toBe(false);
  });

  it('has nothing in other namespaces (only get on the Session CRD, cluster-wide, by name)', async () => {
    expect(await extraPermissions(CONTROLLER, ns, other)).toEqual([CRD_GET]);
    expect(await canI(CONTROLLER, ns, ['get', 'customresourcedefinitions'])).toBe(false);
    expect(await canI(CONTROLLER, ns, ['create', 'pods', '-n', other])).toBe(false);
    expect(await canI(CONTROLLER, ns, ['create', 'pods', '-n', ns])).toBe(false);
  });

  it("can grant a phone's runner its Role only because it holds those verbs (escalation check)", async () => {
    const phone = '+14155550123';
    const session = await sessionClient(kc).create(ns, sessionName(testPhoneHash(phone)), {
      phone,
      prompt: 'hi',
      repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
      workspace: workspaceName(testPhoneHash(phone)),
    });
    const { serviceAccount, role, roleBinding } = desiredIdentity(session, [session.metadata.name!], config);
    const as = `--as=system:serviceaccount:${ns}:${CONTROLLER}`;
    await kubectlOk(['create', as, '-f', manifestFile([serviceAccount, role])]);
    // The binding's escalation check reads the new Role from the API server's RBAC cache, which
    // may lag a moment behind (the controller retries the same way).
    const binding = manifestFile([roleBinding]);
    await eventually(
      async () => expect((await kubectlResult(['create', as, '-f', binding])).stderr).toBe(''),
      10_000,
      200,
    );
    const runner = serviceAccount.metadata!.name!;
    await eventually(
      async () =>
        expect(await canI(runner, runners, ['get', `sessions.tether.dev/${session.metadata.name}`, '-n', ns])).toBe(
          true,
        ),
      10_000,
      200,
    );
    expect(
      await canI(runner, runners, [
        'patch',
        `sessions.tether.dev/${session.metadata.name}`,
        '--subresource=status',
        '-n',
        ns,
      ]),
    ).toBe(true);
    expect(
      await canI(runner, runners, ['patch', 'sessions.tether.dev/someone-else', '--subresource=status', '-n', ns]),
    ).toBe(false);
    expect(await canI(runner, runners, ['patch', `sessions.tether.dev/${session.metadata.name}`, '-n', ns])).toBe(
      false,
    );
    // A live runner watches its own Role for the next Session bound to its Pod; no other Role.
    for (const verb of ['get', 'watch'])
      expect(await canI(runner, runners, [verb, `roles.rbac.authorization.k8s.io/${runner}`, '-n', ns])).toBe(true);
    expect(await canI(runner, runners, ['get', 'roles.rbac.authorization.k8s.io/runner-someone', '-n', ns])).toBe(
      false,
    );
    expect(await canI(runner, runners, ['patch', `roles.rbac.authorization.k8s.io/${runner}`, '-n', ns])).toBe(false);
    expect(await extraPermissions(runner, runners, runners)).toEqual([]);

    // A Role with a verb the controller lacks is refused: it cannot widen anyone's rights.
    const wider = {
      ...role,
      metadata: { ...role.metadata, name: 'wider' },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
    };
    const refused = await kubectlResult(['create', as, '-f', manifestFile([wider])]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('attempting to grant RBAC permissions not currently held');
  });
});

describe('runner Pod admission policy', () => {
  const phone = '+14155550124';
  const createAsController = (pod: object) => createPodAsController(ns, runners, pod);
  const runnerPod = () => desiredPod(unstoredSession(phone, ns), config);
  beforeAll(async () => {
    // The phone's runner ServiceAccount, as the controller makes it (a Pod may only name one that exists).
    const { serviceAccount } = desiredIdentity(unstoredSession(phone, ns), [], config);
    await kubectlOk(['create', `--as=system:serviceaccount:${ns}:${CONTROLLER}`, '-f', manifestFile([serviceAccount])]);
  });

  it("admits the controller's runner Pod as the controller builds it", async () => {
    const admitted = await createAsController(runnerPod());
    expect(admitted.stderr).toBe('');
    expect(admitted.code).toBe(0);
  });

  it('refuses the controller a Pod with another image, another ServiceAccount or another Secret', async () => {
    const cases: Array<[string, (pod: ReturnType<typeof runnerPod>) => void, RegExp]> = [
      [
        'another image',
        (p) => {
          p.spec!.containers[0]!.image = 'busybox:latest';
        },
        /only the runner image/,
      ],
      [
        'another image in the agent container',
        (p) => {
          p.spec!.initContainers![0]!.image = 'evil/agent:1';
        },
        /only the runner image/,
      ],
      [
        'another ServiceAccount',
        (p) => {
          p.spec!.serviceAccountName = 'default';
        },
        /runner ServiceAccount/,
      ],
      [
        'a Secret volume',
        (p) => {
          p.spec!.volumes!.push({ name: 'loot', secret: { secretName: 'tether-relay' } });
        },
        /no Secret volume/,
      ],
      [
        'a projected Secret',
        (p) => {
          p.spec!.volumes!.push({ name: 'loot', projected: { sources: [{ secret: { name: 'tether-twilio' } }] } });
        },
        /no Secret volume/,
      ],
      [
        'a volume type the runner does not use',
        (p) => {
          p.spec!.volumes!.push({ name: 'loot', configMap: { name: 'tether-relay-claims' } });
        },
        /nothing but their claim/,
      ],
      [
        'another Secret in env',
        (p) => {
          p.spec!.containers[0]!.env!.push({
            name: 'X',
            valueFrom: { secretKeyRef: { name: 'tether-relay', key: 'k' } },
          });
        },
        /no Secret but the runner's/,
      ],
      [
        'another Secret in envFrom',
        (p) => {
          p.spec!.containers[0]!.envFrom = [{ secretRef: { name: 'tether-relay' } }];
        },
        /no Secret but the runner's/,
      ],
    ];
    for (const [what, change, message] of cases) {
      const pod = runnerPod();
      change(pod);
      const refused = await createAsController(pod);
      expect(refused.code, what).not.toBe(0);
      expect(refused.stderr, what).toMatch(message);
    }
  });

  it(`refuses a hostPath volume also in a runner \
namespace without Pod Security "restricted" (an operator-made one)`, async () => {
    const enforce = 'pod-security.kubernetes.io/enforce';
    const { stdout: was } = await kubectlOk([
      'get',
      'namespace',
      runners,
      '-o',
      `jsonpath={.metadata.labels.${enforce.replace(/\./g, '\\.')}}`,
    ]);
    await kubectlOk(['label', '--overwrite', 'namespace', runners, `${enforce}=privileged`]);
    try {
      const pod = runnerPod();
      pod.spec!.volumes!.push({ name: 'loot', hostPath: { path: '/var/lib/kubelet/pods' } });
      const refused = await createAsController(pod);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/no hostPath/);
      expect(refused.stderr).not.toMatch(/PodSecurity/);
    } finally {
      await kubectlOk(['label', '--overwrite', 'namespace', runners, `${enforce}=${was}`]);
    }
  });
});

describe('relay ServiceAccount', () => {
  it('has exactly the intended permissions in its namespace', async () => {
    expect(await extraPermissions(RELAY, ns)).toEqual([
      'configmaps [tether-pull-requests] get update',
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

describe('relay ServiceAccount with several repositories', () => {
  it('may also get and update the repo-choices ConfigMap, by name only', async () => {
    await helmRelease('upgrade', 'tether', ns, {
      sessions: { creators: { groups: ['system:masters'] } },
      relay: { repositories: [{ name: 'api', url: 'https://github.com/acme/api.git' }] },
    });
    await eventually(
      async () =>
        expect(await extraPermissions(RELAY, ns)).toEqual([
          'configmaps [tether-pull-requests] get update',
          'configmaps [tether-relay-claims] get update',
          'configmaps [tether-relay-repo-choices] get update',
          'sessions.tether.dev [] create get list patch watch',
          'tokenreviews.authentication.k8s.io [] create',
        ]),
      10_000,
      200,
    );
    expect(await canI(RELAY, ns, ['create', 'configmaps', '-n', ns])).toBe(false);
    expect(await canI(RELAY, ns, ['update', 'configmaps/tether-relay-repo-choices', '-n', ns])).toBe(true);
    await kubectlOk(['get', 'configmap', 'tether-relay-repo-choices', '-n', ns]);
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
    const roles = JSON.parse(
      (await kubectlOk(['get', 'roles', '-n', ns, '-l', 'app.kubernetes.io/instance=tether', '-o', 'json'])).stdout,
    ) as { items: { rules: object[] }[] };
    const clusterRole = JSON.parse(
      (await kubectlOk(['get', 'clusterrole', `${ns}-tether-relay`, '-o', 'json'])).stdout,
    ) as { rules: object[] };
    const rules = [...roles.items, clusterRole].flatMap((r) => r.rules);
    expect(rules.length).toBeGreaterThan(5);
    expect(JSON.stringify(rules)).not.toContain('*');
  });
});

describe('controller ServiceAccount with a GitHub App', () => {
  const phone = '+14155550125';
  let appConfig: ControllerConfig;
  const writeAsController = (verb: 'create' | 'replace', object: object) =>
    kubectlResult([
      verb,
      `--as=system:serviceaccount:${ns}:${CONTROLLER}`,
      '-n',
      runners,
      '-f',
      manifestFile([object]),
    ]);
  beforeAll(async () => {
    await helmRelease('upgrade', 'tether', ns, {
      sessions: { creators: { groups: ['system:masters'] } },
      secrets: { relay: { phoneHashKey: TEST_PHONE_HASH_KEY } },
      github: { app: { id: '11', installationId: '22', existingSecret: 'app-key' } },
    });
    appConfig = loadConfig({ ...(await installedControllerEnv(ns)), TETHER_GITHUB_APP_PRIVATE_KEY_FILE: '/k.pem' });
    const { serviceAccount } = desiredIdentity(unstoredSession(phone, ns), [], appConfig);
    await kubectlOk(['create', `--as=system:serviceaccount:${ns}:${CONTROLLER}`, '-f', manifestFile([serviceAccount])]);
  }, 300_000);

  it(`may write Secrets in the runner namespace but read none; in its own, read and replace only the relay's \
token`, async () => {
    await eventually(
      async () =>
        expect(await extraPermissions(CONTROLLER, ns, runners)).toEqual([
          CRD_GET,
          'persistentvolumeclaims [] create get list watch',
          'pods [] create delete get list patch watch',
          'secrets [] create update',
          'serviceaccounts [] create',
        ]),
      10_000,
      200,
    );
    for (const verb of ['get', 'list', 'watch'])
      expect(await canI(CONTROLLER, ns, [verb, 'secrets', '-n', runners]), verb).toBe(false);
    expect(await canI(CONTROLLER, ns, ['get', 'secrets/tether-relay-github', '-n', ns])).toBe(true);
    expect(await canI(CONTROLLER, ns, ['get', 'secrets/tether-relay', '-n', ns])).toBe(false);
    expect(await canI(CONTROLLER, ns, ['update', 'secrets/tether-relay', '-n', ns])).toBe(false);
  });

  it(`admits the App's runner Pod, whose token only the runner container mounts; refuses the agent mounting \
it`, async () => {
    const pod = desiredPod(unstoredSession(phone, ns), appConfig);
    expect(JSON.stringify(pod)).toContain('github-token');
    const admitted = await createPodAsController(ns, runners, pod);
    expect(admitted.stderr).toBe('');
    const agentMounts = desiredPod(unstoredSession(phone, ns), appConfig);
    agentMounts.spec!.initContainers![0]!.volumeMounts!.push({ name: 'github-token', mountPath: '/loot' });
    const refused = await createPodAsController(ns, runners, agentMounts);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/only the runner container mounts/);
    const otherToken = desiredPod(unstoredSession(phone, ns), appConfig);
    otherToken.spec!.volumes!.find((v) => v.secret)!.secret!.secretName = 'someone-else-runner-github';
    expect((await createPodAsController(ns, runners, otherToken)).stderr).toMatch(/no Secret volume but their own/);
  });

  it(`writes only runner Pods' own token Secrets: never the runner Secret, nor one another Pod would \
mount`, async () => {
    // A real runner Pod (never scheduled here) to own the Secret: the garbage collector removes one whose
    // owner is gone.
    const pod = desiredPod(unstoredSession(phone, ns), appConfig);
    await kubectlOk([
      'create',
      `--as=system:serviceaccount:${ns}:${CONTROLLER}`,
      '-n',
      runners,
      '-f',
      manifestFile([pod]),
    ]);
    const podName = pod.metadata!.name!;
    const uid = (await kubectlOk(['get', 'pod', podName, '-n', runners, '-o', 'jsonpath={.metadata.uid}'])).stdout;
    // The token's expiry, recorded on the Pod: a patch the runner Pod policy admits.
    const annotated = await kubectlResult([
      'annotate',
      `--as=system:serviceaccount:${ns}:${CONTROLLER}`,
      '-n',
      runners,
      `pod/${podName}`,
      'tether.dev/github-token-expires-at=2026-11-27T10:00:00.000Z',
    ]);
    expect(annotated.stderr).toBe('');
    const tokenSecret = (name: string, owner: string, extra: Record<string, string> = {}) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        labels: { 'app.kubernetes.io/component': 'runner-github' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner, uid }],
      },
      data: { token: Buffer.from('ghs_x').toString('base64'), ...extra },
    });
    const asEgress = (secret: ReturnType<typeof tokenSecret>) => ({
      ...secret,
      metadata: { ...secret.metadata, labels: { 'app.kubernetes.io/component': 'runner-egress' } },
    });
    expect((await writeAsController('create', tokenSecret(`${podName}-github`, podName))).stderr).toBe('');
    expect((await writeAsController('replace', tokenSecret(`${podName}-github`, podName))).stderr).toBe('');
    // A Secret of the Pod's egress name made by someone else (no Tether label): the controller may not take it.
    await kubectlOk(['create', 'secret', 'generic', `${podName}-egress`, '-n', runners, '--from-literal=token=x']);
    const refusals: Array<[string, object, 'create' | 'replace']> = [
      [
        'the runner Secret replaced',
        { ...tokenSecret('tether-runner', 'tether'), metadata: { name: 'tether-runner' } },
        'replace',
      ],
      ['the runner Secret replaced, labelled', tokenSecret('tether-runner', 'tether'), 'replace'],
      ['a token for another Pod', tokenSecret('p2-runner-github', podName), 'create'],
      ['another key', tokenSecret('p3-runner-github', 'p3-runner', { KEY: 'eA==' }), 'create'],
      ['an egress Secret named as the GitHub token', asEgress(tokenSecret(`${podName}-github`, podName)), 'create'],
      ['a Secret of the Pod made by another, replaced', asEgress(tokenSecret(`${podName}-egress`, podName)), 'replace'],
    ];
    for (const [what, object, verb] of refusals) {
      const refused = await writeAsController(verb, object);
      expect(refused.code, what).not.toBe(0);
      expect(refused.stderr, what).toMatch(/runner Pods' own Secrets|a runner Pod's Secret of the same kind/);
    }
  });
});
