// A Pod with everything the runner Pod asks of a node (controller/builders.ts): non-root users,
// read-only root file systems, every capability dropped, RuntimeDefault seccomp, a projected
// ServiceAccount token, a native sidecar, a workspace claim bound from the local pool, and
// liveness/readiness probes on loopback — run by a real kubelet through containerd.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { STORAGE_CLASS, TOOLS_IMAGE } from '../../local/kubelet-node/settings.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { containerLog, runningContainers, waitForPodGone, waitForPodReady } from '../support/kubelet-node.ts';

const TOKEN_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const locked = (uid: number) => ({
  runAsUser: uid,
  runAsGroup: 1000,
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  privileged: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

/** Each container records who it is and what it may do into the workspace, then serves or waits. */
function runnerLikePod(name: string, port: number): V1Pod {
  const report = (who: string) =>
    `id > /workspace/${who}.id; grep CapEff /proc/self/status > /workspace/${who}.caps; ` +
    `if touch /root-write 2>/dev/null; then echo writable; else echo read-only; fi > /workspace/${who}.rootfs; `;
  const probe = { httpGet: { host: '127.0.0.1', port, path: '/index.html' }, periodSeconds: 1 };
  return {
    metadata: { name },
    spec: {
      hostNetwork: true,
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      serviceAccountName: name,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
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
          image: TOOLS_IMAGE,
          imagePullPolicy: 'Never',
          restartPolicy: 'Always',
          command: ['sh', '-c', `${report('agent')} echo agent up; exec sleep 3600`],
          securityContext: locked(1001),
          volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }],
        },
      ],
      containers: [
        {
          name: 'runner',
          image: TOOLS_IMAGE,
          imagePullPolicy: 'Never',
          command: [
            'sh',
            '-c',
            `${report('runner')} cp ${TOKEN_DIR}/token /workspace/token; mkdir -p /tmp/www; echo ok > ` +
              `/tmp/www/index.html; ` +
              `echo runner up; exec httpd -f -p 127.0.0.1:${port} -h /tmp/www`,
          ],
          securityContext: locked(1000),
          readinessProbe: probe,
          livenessProbe: { ...probe, periodSeconds: 2 },
          volumeMounts: [
            { name: 'workspace', mountPath: '/workspace' },
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'kube-api-access', mountPath: TOKEN_DIR, readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'workspace', persistentVolumeClaim: { claimName: `${name}-workspace` } },
        { name: 'tmp', emptyDir: {} },
        {
          name: 'kube-api-access',
          projected: {
            defaultMode: 0o444,
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            ],
          },
        },
      ],
    },
  };
}

describe('a runner-like Pod on the kubelet node tier', () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let ns: string;
  let pod: V1Pod;
  let workspace: string;
  const name = 'runner-like';

  beforeAll(async () => {
    kc = adminKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createNamespace(kc, 'node');
    await core.createNamespacedServiceAccount({
      namespace: ns,
      body: { metadata: { name }, automountServiceAccountToken: false },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: `${name}-workspace` },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    await core.createNamespacedPod({ namespace: ns, body: runnerLikePod(name, await freePort()) });
    pod = await waitForPodReady(kc, ns, name);
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: `${name}-workspace`, namespace: ns });
    workspace = inject('volumeFolders')[claim.spec!.volumeName!]!;
  });

  afterAll(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  it(`is scheduled onto the node, its claim bound to \
a pool volume of the default class, both containers ready`, async () => {
    expect(pod.spec!.nodeName).toBe(inject('nodeName'));
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: `${name}-workspace`, namespace: ns });
    expect(claim.status!.phase).toBe('Bound');
    expect(claim.spec!.storageClassName).toBe(STORAGE_CLASS);
    expect(workspace).toBeDefined();
    expect(pod.status!.initContainerStatuses![0]).toMatchObject({ name: 'agent', started: true, ready: true });
    expect(pod.status!.containerStatuses![0]).toMatchObject({ name: 'runner', ready: true, restartCount: 0 });
  });

  it('runs each container as its own non-root user in the fsGroup, read-only root, no capabilities', async () => {
    const read = (file: string) => readFile(join(workspace, file), 'utf8');
    expect(await read('runner.id')).toMatch(/^uid=1000 gid=1000 groups=1000\b/);
    expect(await read('agent.id')).toMatch(/^uid=1001 gid=1000 groups=1000\b/);
    for (const who of ['runner', 'agent']) {
      expect(await read(`${who}.caps`)).toMatch(/CapEff:\s+0000000000000000/);
      expect((await read(`${who}.rootfs`)).trim()).toBe('read-only');
    }
    const owner = await stat(join(workspace, 'runner.id'));
    expect([owner.uid, owner.gid]).toEqual([1000, 1000]);
  });

  it("mounts a projected ServiceAccount token the API server accepts as the Pod's account", async () => {
    const token = (await readFile(join(workspace, 'token'), 'utf8')).trim();
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string };
    expect(payload.sub).toBe(`system:serviceaccount:${ns}:${name}`);
  });

  it("serves its probes on loopback and writes its logs to kubelet's files", async () => {
    const port = pod.spec!.containers[0]!.readinessProbe!.httpGet!.port as number;
    const response = await fetch(`http://127.0.0.1:${port}/index.html`);
    expect((await response.text()).trim()).toBe('ok');
    expect(await containerLog(pod, 'runner')).toContain('runner up');
    expect(await containerLog(pod, 'agent')).toContain('agent up');
  });

  it('is torn down when deleted: containers gone, the workspace kept on its volume', async () => {
    expect((await runningContainers(pod.metadata!.uid!)).length).toBeGreaterThan(0);
    await core.deleteNamespacedPod({ name, namespace: ns });
    await waitForPodGone(kc, ns, name);
    await eventually(async () => expect(await runningContainers(pod.metadata!.uid!)).toEqual([]), 30_000, 250);
    expect(await readFile(join(workspace, 'runner.id'), 'utf8')).toContain('uid=1000');
  });
});
