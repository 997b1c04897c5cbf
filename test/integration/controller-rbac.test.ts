// Least privilege, checked by the API server itself: with a token of the phone's runner
// ServiceAccount bound to the runner Pod (TokenRequest API, as the kubelet gets it), the runner can
// read its own Session and write its own status across namespaces, and nothing else — no other
// phone's Session. Runner Pods live in their own namespace and pass Pod Security `restricted`.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiError } from '../../common/kube/errors.ts';
import { getJson, streamJsonLines } from '../../common/kube/raw.ts';
import { SessionClient } from '../../common/kube/sessions.ts';
import { runnerIdentityName, runnerName } from '../../common/session/names.ts';
import { GROUP, PLURAL, VERSION } from '../../common/session/schema.ts';
import {
  adminKubeConfig,
  createNamespace,
  deleteNamespace,
  installSessionCrd,
  sessionClient,
} from '../support/cluster.ts';
import { createSession, phaseOf, startController, testConfig, type RunningController } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

let kc: KubeConfig;
let ns: string;
let runners: string;
let admin: SessionClient;
let running: RunningController;
let mine: string;
let other: string;
let runner: KubeConfig;

async function runnerKubeConfig(session: string, phone: string): Promise<KubeConfig> {
  const core = kc.makeApiClient(CoreV1Api);
  const pod = await core.readNamespacedPod({ namespace: runners, name: runnerName(session) });
  const token = await core.createNamespacedServiceAccountToken({
    namespace: runners,
    name: runnerIdentityName(testPhoneHash(phone)),
    body: {
      spec: {
        audiences: [],
        expirationSeconds: 600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: pod.metadata!.uid! },
      },
    },
  });
  const cluster = kc.getCurrentCluster()!;
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, name: 'local' }],
    users: [{ name: 'runner', token: token.status!.token }],
    contexts: [{ name: 'runner', cluster: 'local', user: 'runner' }],
    currentContext: 'runner',
  });
  return out;
}

async function forbidden(call: Promise<unknown>): Promise<void> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'the runner was allowed to do it').toBeDefined();
  expect(apiError(error)?.code).toBe(403);
}

beforeAll(async () => {
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  [ns, runners] = await Promise.all([createNamespace(kc, 'ctl-rbac'), createNamespace(kc, 'ctl-rbac-run')]);
  await kc.makeApiClient(CoreV1Api).patchNamespace(
    {
      name: runners,
      body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  admin = sessionClient(kc);
  running = await startController(kc, testConfig(ns, { TETHER_RUNNER_NAMESPACE: runners }));
  mine = await createSession(admin, ns, '+14155554001');
  other = await createSession(admin, ns, '+14155554002');
  await eventually(async () =>
    expect([await phaseOf(admin, ns, mine), await phaseOf(admin, ns, other)]).toEqual(['Starting', 'Starting']),
  );
  runner = await runnerKubeConfig(mine, '+14155554001');
});
afterAll(async () => {
  await running?.stop();
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners)]);
});

describe('runner credentials', () => {
  it('may read and watch its own Session and patch its own status', async () => {
    const sessions = new SessionClient(connectionFromKubeConfig(runner));
    expect((await sessions.get(ns, mine))?.metadata.name).toBe(mine);
    const patched = await sessions.patchStatus(ns, mine, { phase: 'Working' });
    expect(patched.status?.phase).toBe('Working');
    const events: unknown[] = [];
    await streamJsonLines(
      connectionFromKubeConfig(runner),
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
      { watch: 1, fieldSelector: `metadata.name=${mine}`, timeoutSeconds: 1 },
      (e) => events.push(e),
      new AbortController().signal,
    );
    expect(events.length).toBeGreaterThanOrEqual(1);
  });

  it("may not read or write another phone's Session, any spec, the collection, or anything else", async () => {
    const sessions = new SessionClient(connectionFromKubeConfig(runner));
    await forbidden(sessions.patchStatus(ns, other, { phase: 'Succeeded' }));
    await forbidden(sessions.get(ns, other));
    await forbidden(sessions.patch(ns, mine, { spec: { cancel: true } }));
    await forbidden(sessions.patch(ns, other, { spec: { cancel: true } }));
    await forbidden(
      sessions.create(ns, 'x-20260101000000-0000', {
        phone: '+14155554001',
        prompt: 'p',
        repo: { url: 'https://x/y.git' },
        workspace: 'ws-x',
      }),
    );
    await forbidden(sessions.delete(ns, mine));
    await forbidden(getJson(connectionFromKubeConfig(runner), `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`));
    const otherWatch = await streamJsonLines(
      connectionFromKubeConfig(runner),
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
      { watch: 1, fieldSelector: `metadata.name=${other}`, timeoutSeconds: 1 },
      () => undefined,
      new AbortController().signal,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(apiError(otherWatch)?.code).toBe(403);
    const core = runner.makeApiClient(CoreV1Api);
    for (const namespace of [ns, runners]) {
      await forbidden(core.listNamespacedSecret({ namespace }));
      await forbidden(core.readNamespacedSecret({ namespace, name: 'tether-runner' }));
      await forbidden(core.listNamespacedPod({ namespace }));
    }
    await forbidden(
      core.createNamespacedServiceAccountToken({
        namespace: runners,
        name: runnerIdentityName(testPhoneHash('+14155554002')),
        body: { spec: { audiences: [] } },
      }),
    );
    await forbidden(core.deleteNamespacedPod({ namespace: runners, name: runnerName(other) }));
    expect((await admin.get(ns, other))?.status?.phase).toBe('Starting');
    expect((await admin.get(ns, mine))?.spec.cancel).not.toBe(true);
  });

  it('runner Pods pass Pod Security "restricted" enforcement (which rejects a plain Pod here)', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const pod = await core.readNamespacedPod({ namespace: runners, name: runnerName(mine) });
    expect(pod.spec?.securityContext?.runAsNonRoot).toBe(true);
    const refused = await core
      .createNamespacedPod({
        namespace: runners,
        body: {
          metadata: { name: 'plain' },
          spec: { containers: [{ name: 'c', image: 'x' }] },
        },
      })
      .then(
        () => undefined,
        (e: unknown) => apiError(e),
      );
    expect(refused?.code).toBe(403);
    expect(refused?.message).toMatch(/violates PodSecurity "restricted/);
  });
});
