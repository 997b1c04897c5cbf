import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { desiredPvc } from '../../controller/workspace-claim.ts';
import { desiredIdentity, grantedSessions } from '../../controller/identity.ts';
import type { Session } from '../../common/session/schema.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

const session: Session = testSession({ name: 'abc-20261122083000-k3x9', uid: 'uid-1' });
const owner = {
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  name: 'abc-20261122083000-k3x9',
  uid: 'uid-1',
  controller: true,
  blockOwnerDeletion: true,
};
const labels = {
  'tether.dev/session': 'abc-20261122083000-k3x9',
  'tether.dev/phone-hash': 'aa47515234d8f459',
  'app.kubernetes.io/component': 'runner',
  'app.kubernetes.io/part-of': 'tether',
};
const RUNNER_KEY = expect.stringMatching(/^[0-9a-f]{32}$/) as unknown as string;
/** A Pod kept live (the default keep-alive) is owned by none of the Sessions it serves. */
const meta = {
  name: 'abc-20261122083000-k3x9-runner',
  namespace: 'tether',
  labels: { ...labels, 'tether.dev/workspace': session.spec.workspace },
  annotations: { 'tether.dev/session-uid': 'uid-1', 'tether.dev/runner-key': RUNNER_KEY },
};

describe('desiredPod', () => {
  it('builds the whole runner Pod per the contract', () => {
    expect(labels['tether.dev/phone-hash']).toBe(session.metadata.labels!['tether.dev/phone-hash']);
    expect(
      desiredPod(
        session,
        unitConfig({
          relayUrl: 'http://relay.tether:8080',
          githubApiUrl: 'https://ghe.example/api/v3',
          repoHosts: ['github.com', 'ghe.example'],
        }),
      ),
    ).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: meta,
      spec: {
        serviceAccountName: 'runner-aa47515234d8f459',
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 30,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 1000,
          runAsGroup: 1000,
          fsGroup: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
        },
        initContainers: [
          {
            name: 'agent',
            image: 'tether-runner:test',
            imagePullPolicy: 'IfNotPresent',
            restartPolicy: 'Always',
            args: ['node', '--disable-sigusr1', '/app/runner-image/agent-host/main.ts'],
            workingDir: '/workspace',
            env: [
              { name: 'TETHER_AGENT_SOCKET', value: '/run/tether/supervisor/agent.sock' },
              { name: 'HOME', value: '/workspace/home' },
              { name: 'TMPDIR', value: '/tmp' },
            ],
            resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '2', memory: '4Gi' } },
            securityContext: {
              allowPrivilegeEscalation: false,
              privileged: false,
              runAsNonRoot: true,
              runAsUser: 1001,
              runAsGroup: 1000,
              capabilities: { drop: ['ALL'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
            volumeMounts: [
              { name: 'workspace', mountPath: '/workspace' },
              { name: 'agent-socket', mountPath: '/run/tether' },
              { name: 'agent-tmp', mountPath: '/tmp' },
            ],
          },
        ],
        containers: [
          {
            name: 'runner',
            image: 'tether-runner:test',
            imagePullPolicy: 'IfNotPresent',
            args: ['node', '--no-global-search-paths', '/app/runner-image/main.ts'],
            workingDir: '/var/lib/tether/git',
            env: [
              { name: 'TETHER_SESSION_NAME', value: 'abc-20261122083000-k3x9' },
              { name: 'TETHER_SESSION_NAMESPACE', value: 'tether' },
              { name: 'TETHER_WORKSPACE', value: '/workspace' },
              { name: 'HOME', value: '/var/lib/tether/git/home' },
              { name: 'TETHER_AGENT_HOME', value: '/workspace/home' },
              { name: 'TETHER_GIT_STORE', value: '/var/lib/tether/git' },
              { name: 'TETHER_RELAY_TOKEN_FILE', value: '/var/run/secrets/tether/relay/token' },
              { name: 'TETHER_AGENT_SOCKET', value: '/run/tether/supervisor/agent.sock' },
              { name: 'TETHER_POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
              { name: 'TETHER_RUNNER_LIVE', value: 'true' },
              { name: 'TETHER_RELAY_URL', value: 'http://relay.tether:8080' },
              { name: 'GITHUB_API_URL', value: 'https://ghe.example/api/v3' },
              { name: 'TETHER_REPO_HOSTS', value: 'github.com,ghe.example' },
              {
                name: 'ANTHROPIC_API_KEY',
                valueFrom: { secretKeyRef: { name: 'tether-runner', key: 'ANTHROPIC_API_KEY', optional: true } },
              },
              {
                name: 'GITHUB_TOKEN',
                valueFrom: { secretKeyRef: { name: 'tether-runner', key: 'GITHUB_TOKEN', optional: true } },
              },
            ],
            resources: { requests: { cpu: '200m', memory: '512Mi' }, limits: { cpu: '1', memory: '2Gi' } },
            securityContext: {
              allowPrivilegeEscalation: false,
              privileged: false,
              runAsNonRoot: true,
              runAsUser: 1000,
              runAsGroup: 1000,
              capabilities: { drop: ['ALL'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
            volumeMounts: [
              { name: 'workspace', mountPath: '/workspace' },
              { name: 'git-store', mountPath: '/var/lib/tether/git' },
              { name: 'runner-home', mountPath: '/var/lib/tether/git/home' },
              { name: 'agent-socket', mountPath: '/run/tether' },
              { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
              { name: 'relay-token', mountPath: '/var/run/secrets/tether/relay', readOnly: true },
            ],
          },
        ],
        volumes: [
          { name: 'workspace', persistentVolumeClaim: { claimName: session.spec.workspace } },
          { name: 'git-store', persistentVolumeClaim: { claimName: `${session.spec.workspace}.git` } },
          { name: 'runner-home', emptyDir: {} },
          { name: 'agent-socket', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
          { name: 'agent-tmp', emptyDir: {} },
          {
            name: 'kube-api-access',
            projected: {
              defaultMode: 0o444,
              sources: [
                { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
                { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
                {
                  downwardAPI: {
                    items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
                  },
                },
              ],
            },
          },
          {
            name: 'relay-token',
            projected: {
              defaultMode: 0o444,
              sources: [{ serviceAccountToken: { audience: 'tether-relay', path: 'token', expirationSeconds: 3600 } }],
            },
          },
        ],
      },
    });
  });

  it('leaves out optional URLs and never inlines a secret value', () => {
    const pod = desiredPod(session, unitConfig());
    const env = pod.spec!.containers[0]!.env!;
    expect(env.map((e) => e.name)).not.toContain('TETHER_RELAY_URL');
    expect(env.map((e) => e.name)).not.toContain('GITHUB_API_URL');
    expect(
      env.filter((e) => /KEY|TOKEN$/.test(e.name)).every((e) => e.value === undefined && e.valueFrom?.secretKeyRef),
    ).toBe(true);
  });

  it(`gives the agent container no credential: no Secret, \
no token volume, no credential-like variable, its own uid`, () => {
    const spec = desiredPod(session, unitConfig({ relayUrl: 'http://relay.tether:8080' })).spec!;
    const [agent] = spec.initContainers!;
    expect(
      agent!.env!.every((e) => e.valueFrom === undefined && !/TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL/i.test(e.name)),
    ).toBe(true);
    expect(agent!.envFrom).toBeUndefined();
    const secretVolumes = spec.volumes!.filter((v) => v.secret || v.projected).map((v) => v.name);
    expect(agent!.volumeMounts!.map((m) => m.name).filter((name) => secretVolumes.includes(name))).toEqual([]);
    expect(agent!.securityContext!.runAsUser).not.toBe(spec.containers[0]!.securityContext!.runAsUser);
    expect(spec.shareProcessNamespace).toBeUndefined();
  });

  it('runs runner Pods under the configured RuntimeClass (e.g. gVisor), and under the default without one', () => {
    expect(desiredPod(session, unitConfig({ runtimeClassName: 'gvisor' })).spec!.runtimeClassName).toBe('gvisor');
    expect(desiredPod(session, unitConfig()).spec).not.toHaveProperty('runtimeClassName');
  });

  it('without keep-alive: owned by its Session beside it, and no live runner', () => {
    const pod = desiredPod(session, unitConfig({ keepAliveMs: 0 }));
    expect(pod.metadata).toEqual({ ...meta, ownerReferences: [owner] });
    const names = pod.spec!.containers[0]!.env!.map((e) => e.name);
    expect(names).toContain('TETHER_POD_NAME');
    expect(names).not.toContain('TETHER_RUNNER_LIVE');
  });

  it('names a replacement Pod after the lost one, on the same workspace', () => {
    const pod = desiredPod(session, unitConfig(), 'ws-other', 1);
    expect(pod.metadata!.name).toBe('abc-20261122083000-k3x9-runner-1');
    expect(pod.metadata!.labels!['tether.dev/workspace']).toBe('ws-other');
    expect(pod.spec!.volumes![0]).toEqual({ name: 'workspace', persistentVolumeClaim: { claimName: 'ws-other' } });
  });

  it("keys a Pod by what is not one Session's: the phone's next Session gets the same key, another image, \
repository, workspace or setting another", () => {
    const key = (s: Session, config = unitConfig(), claim?: string) =>
      desiredPod(s, config, claim).metadata!.annotations!['tether.dev/runner-key'];
    const next = testSession({ name: 'abc-20261122090000-zzzz', uid: 'uid-2' });
    expect(key(next)).toBe(key(session));
    expect(key(session, unitConfig(), 'ws-other')).not.toBe(key(session));
    expect(key(session, unitConfig({ runnerImage: 'tether-runner:next' }))).not.toBe(key(session));
    expect(key(session, unitConfig({ repoHosts: ['github.com', 'ghe.example'] }))).not.toBe(key(session));
    const otherRepo = { ...next, spec: { ...next.spec, repo: { url: 'https://github.com/acme/api.git' } } };
    expect(key(otherRepo)).not.toBe(key(session));
    const otherPhone = testSession({ name: 'abc-20261122083000-k3x9', uid: 'uid-1', phone: '+14155550999' });
    expect(key(otherPhone, unitConfig(), session.spec.workspace)).not.toBe(key(session));
  });

  it('is deterministic', () => {
    expect(desiredPod(session, unitConfig())).toEqual(desiredPod(structuredClone(session), unitConfig()));
  });

  it(`puts the Pod in the runner namespace, without an owner reference across namespaces, naming its Session by label \
and uid`, () => {
    const pod = desiredPod(session, unitConfig({ runnerNamespace: 'tether-runners', keepAliveMs: 0 }));
    expect(pod.metadata).toEqual({ ...meta, namespace: 'tether-runners' });
    expect(pod.metadata).not.toHaveProperty('ownerReferences');
    expect(pod.spec!.containers[0]!.env).toContainEqual({ name: 'TETHER_SESSION_NAMESPACE', value: 'tether' });
    expect(desiredPvc(session, unitConfig({ runnerNamespace: 'tether-runners' })).metadata!.namespace).toBe(
      'tether-runners',
    );
  });
});

describe('desiredPvc', () => {
  it('builds the per-phone workspace claim, owned by nobody', () => {
    expect(desiredPvc(session, unitConfig({ pvc: { size: '20Gi', storageClass: 'fast' } }))).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: session.spec.workspace,
        namespace: 'tether',
        labels: {
          'tether.dev/phone-hash': 'aa47515234d8f459',
          'app.kubernetes.io/component': 'workspace',
          'app.kubernetes.io/part-of': 'tether',
        },
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '20Gi' } }, storageClassName: 'fast' },
    });
    expect(desiredPvc(session, unitConfig()).spec).not.toHaveProperty('storageClassName');
  });
});

describe('desiredIdentity', () => {
  it(`is the phone's: its ServiceAccount in the runner namespace, a Role beside the Sessions naming only the Sessions \
given (get, watch; status get, patch, update)`, () => {
    const identityMeta = {
      name: 'runner-aa47515234d8f459',
      namespace: 'tether',
      labels: {
        'tether.dev/phone-hash': 'aa47515234d8f459',
        'app.kubernetes.io/component': 'runner-identity',
        'app.kubernetes.io/part-of': 'tether',
      },
    };
    const names = ['abc-20261122083000-k3x9', 'abc-20261122080000-aaaa'];
    const identity = desiredIdentity(session, [...names, names[0]!], unitConfig({ runnerNamespace: 'tether-runners' }));
    expect(identity).toEqual({
      serviceAccount: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { ...identityMeta, namespace: 'tether-runners' },
        automountServiceAccountToken: false,
      },
      role: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: identityMeta,
        rules: [
          {
            apiGroups: ['tether.dev'],
            resources: ['sessions'],
            resourceNames: [...names].sort(),
            verbs: ['get', 'watch'],
          },
          {
            apiGroups: ['tether.dev'],
            resources: ['sessions/status'],
            resourceNames: [...names].sort(),
            verbs: ['get', 'patch', 'update'],
          },
          {
            apiGroups: ['rbac.authorization.k8s.io'],
            resources: ['roles'],
            resourceNames: ['runner-aa47515234d8f459'],
            verbs: ['get', 'watch'],
          },
        ],
      },
      roleBinding: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: identityMeta,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'runner-aa47515234d8f459' },
        subjects: [{ kind: 'ServiceAccount', name: 'runner-aa47515234d8f459', namespace: 'tether-runners' }],
      },
    });
    expect(grantedSessions(identity.role)).toEqual([...names].sort());
    expect(grantedSessions(undefined)).toEqual([]);
  });
});
