// The install's runner settings on the real API server: the chart installs with them (and with
// OpenShift-style security contexts that leave the uids to the platform), the controller's own
// runner Pod is admitted, and the runner admission policy refuses the controller's account every
// Pod that strays from what the install configured, even where Pod Security is not enforced.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig, type ControllerConfig } from '../../controller/config.ts';
import { desiredIdentity } from '../../controller/identity.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { helmBin } from '../unit/chart-render.ts';
import {
  createPodAsController,
  deleteClusterScoped,
  helmRelease,
  installedControllerEnv,
  kubectlOk,
  kubectlResult,
  manifestFile,
  unstoredSession,
} from './chart-cluster.ts';

const CONTROLLER = 'tether-controller';
const openshift = { runAsUser: null, runAsGroup: null, fsGroup: null };
let kc: KubeConfig;
let ns: string;
let runners: string;
let priorityClass: string;
let config: ControllerConfig;

const values = () => ({
  relay: { publicUrl: 'https://tether.example.com', podSecurityContext: openshift },
  controller: { podSecurityContext: openshift },
  runner: {
    model: 'claude-opus-4-1',
    anthropicBaseUrl: 'https://gateway.example/anthropic',
    proxy: { httpsProxy: 'http://proxy.example:3128', noProxy: 'git.internal' },
    priorityClassName: priorityClass,
    podLabels: { team: 'web' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
    securityContext: { runAsUser: 1000680000, agentRunAsUser: 1000680001, runAsGroup: 1000680000 },
  },
  networkPolicy: { extraEgress: [{ to: [{ ipBlock: { cidr: '192.0.2.10/32' } }], ports: [{ port: 443 }] }] },
  // An operator's proxy is the runners' way out only without the egress proxy (the chart refuses both).
  egress: { enabled: false },
});

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  ns = await createNamespace(kc, 'runset');
  runners = `${ns}-runners`;
  priorityClass = `${ns}-agents`;
  await kubectlOk(['create', 'priorityclass', priorityClass, '--value=1000']);
  await helmRelease('install', 'tether', ns, values());
  config = loadConfig(await installedControllerEnv(ns));
}, 900_000);
afterAll(async () => {
  await deleteClusterScoped([ns]);
  await kubectlResult(['delete', 'priorityclass', priorityClass, '--ignore-not-found']);
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners)]);
});

describe('install with runner settings', () => {
  it('installs with security contexts that leave the uids to the platform', async () => {
    for (const component of ['controller', 'relay']) {
      const { stdout } = await kubectlOk(['get', 'deployment', `tether-${component}`, '-n', ns, '-o', 'json']);
      const spec = (JSON.parse(stdout) as { spec: { template: { spec: { securityContext: object } } } }).spec.template
        .spec;
      expect(spec.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    }
  });

  it('refuses an upgrade whose override asks for privilege, and keeps the release as it was', async () => {
    const privileged = { ...values(), controller: { securityContext: { privileged: true } } };
    await expect(helmRelease('upgrade', 'tether', ns, privileged)).rejects.toThrow(/privileged/);
    const { stdout } = await kubectlOk(['get', 'deployment', CONTROLLER, '-n', ns, '-o', 'json']);
    expect(stdout).not.toContain('"privileged": true');
  });
});

describe('runner Pod admission policy with the install’s settings', () => {
  const phone = '+14155550125';
  const placed = () => unstoredSession(phone, ns);
  const createAsController = (pod: object) => createPodAsController(ns, runners, pod);
  const runner = (pod: V1Pod) => pod.spec!.containers[0]!;
  const setEnv = (pod: V1Pod, name: string, value: string) => {
    const env = runner(pod).env!.filter((e) => e.name !== name);
    runner(pod).env = [...env, { name, value }];
  };
  beforeAll(async () => {
    const { serviceAccount } = desiredIdentity(placed(), [], config);
    await kubectlOk(['create', `--as=system:serviceaccount:${ns}:${CONTROLLER}`, '-f', manifestFile([serviceAccount])]);
    // Every refusal below is the policy's own: Pod Security is not enforced (an operator-made namespace).
    await kubectlOk(['label', '--overwrite', 'namespace', runners, 'pod-security.kubernetes.io/enforce=privileged']);
  });

  it("admits the controller's runner Pod as it builds it from the install's settings", async () => {
    const pod = desiredPod(placed(), config);
    expect(runner(pod).env!.find((e) => e.name === 'ANTHROPIC_BASE_URL')?.value).toBe(
      'https://gateway.example/anthropic',
    );
    expect(pod.spec!.priorityClassName).toBe(priorityClass);
    const admitted = await createAsController(pod);
    expect(admitted.stderr).toBe('');
    expect(admitted.code).toBe(0);
  });

  const hostile: Array<[string, (pod: V1Pod) => void, RegExp]> = [
    ['a model URL elsewhere', (p) => setEnv(p, 'ANTHROPIC_BASE_URL', 'https://collector.example'), /model and proxy/],
    ['another proxy', (p) => setEnv(p, 'HTTPS_PROXY', 'http://mitm.example:8080'), /model and proxy/],
    ['a lower-case proxy', (p) => setEnv(p, 'https_proxy', 'http://mitm.example:8080'), /model and proxy/],
    ['another model', (p) => setEnv(p, 'TETHER_CLAUDE_MODEL', 'claude-opus-4-0'), /model and proxy/],
    [
      'a proxy in the agent container',
      (p) => (p.spec!.initContainers![0]!.env = [{ name: 'ALL_PROXY', value: 'x' }]),
      /model and proxy/,
    ],
    ['no runner label', (p) => delete p.metadata!.labels!['app.kubernetes.io/component'], /runner labels/],
    ['another component label', (p) => (p.metadata!.labels!['app.kubernetes.io/component'] = 'relay'), /runner labels/],
    ['another PriorityClass', (p) => (p.spec!.priorityClassName = 'system-cluster-critical'), /PriorityClass/],
    ['a privileged container', (p) => (runner(p).securityContext!.privileged = true), /privileged/],
    [
      'privilege escalation',
      (p) => (runner(p).securityContext!.allowPrivilegeEscalation = true),
      /privilege escalation/,
    ],
    ['an added capability', (p) => (runner(p).securityContext!.capabilities!.add = ['SYS_ADMIN']), /capability/],
    ['root', (p) => (runner(p).securityContext!.runAsUser = 0), /uids/],
    ['another uid', (p) => (p.spec!.initContainers![0]!.securityContext!.runAsUser = 1000), /uids/],
    ['the host PID namespace', (p) => (p.spec!.hostPID = true), /node's namespaces/],
    ['the host network', (p) => (p.spec!.hostNetwork = true), /node's namespaces/],
    ['a host port', (p) => (runner(p).ports = [{ containerPort: 8080, hostPort: 8080 }]), /node's namespaces/],
  ];
  it.each(hostile)('refuses the controller a runner Pod with %s', async (_what, change, message) => {
    const pod = desiredPod(placed(), config);
    change(pod);
    await eventually(
      async () => {
        const refused = await createAsController(pod);
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toMatch(message);
      },
      10_000,
      200,
    );
  });
});
