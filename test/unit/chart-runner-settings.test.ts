// The install's runner settings and the Deployments' scheduling and security contexts through the
// real helm: chart values → the controller's ConfigMap → its config → the Pod builder; the runner
// NetworkPolicy's extra egress; and what the schema or the templates refuse.
import { beforeAll, describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig } from '../../controller/config.ts';
import {
  HELM_SETUP_TIMEOUT,
  controllerData,
  find,
  helmBin,
  podTemplate,
  render,
  renderError,
  type KubeObject,
} from './chart-render.ts';
import { testSession } from './controller-fixtures.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const BASE = { relay: { publicUrl: 'https://tether.example.com' } };
const extraEgress = [{ to: [{ ipBlock: { cidr: '10.1.2.3/32' } }], ports: [{ protocol: 'TCP', port: 443 }] }];
const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }];
const spread = [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }];
const scheduling = { priorityClassName: 'tether', topologySpreadConstraints: spread, podLabels: { team: 'web' } };
const configured = {
  relay: { ...BASE.relay, ...scheduling },
  controller: scheduling,
  runner: {
    model: 'claude-opus-4-1',
    anthropicBaseUrl: 'https://gateway.example/anthropic',
    proxy: { httpsProxy: 'http://proxy.example:3128', noProxy: 'git.internal' },
    priorityClassName: 'agents',
    nodeSelector: { pool: 'agents' },
    tolerations,
    topologySpreadConstraints: spread,
    podLabels: { team: 'web' },
    securityContext: { runAsUser: 1000680000, agentRunAsUser: 1000680001, runAsGroup: 1000680000 },
  },
  networkPolicy: { extraEgress },
  // An operator's proxy is the runners' way out only without the egress proxy (the chart refuses both).
  egress: { enabled: false },
};
/** Scheduling of the three Deployments. */
const deployments = { relay: { ...BASE.relay, ...scheduling }, controller: scheduling, egress: scheduling };

const session = testSession();
/** The runner Pod the controller builds from the ConfigMap the chart renders. */
const runnerPodOf = (objects: KubeObject[]) => desiredPod(session, loadConfig(controllerData(objects)));
const egressOf = (objects: KubeObject[]) =>
  (find(objects, 'NetworkPolicy', '-runner') as unknown as { spec: { egress: object[] } }).spec.egress;

describe('runner settings through the chart', () => {
  it('gives runner Pods the configured model, gateway, proxy, scheduling, labels and uids', async () => {
    const pod = runnerPodOf(await render(configured));
    const env = Object.fromEntries(pod.spec!.containers[0]!.env!.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      TETHER_CLAUDE_MODEL: 'claude-opus-4-1',
      ANTHROPIC_BASE_URL: 'https://gateway.example/anthropic',
      HTTPS_PROXY: 'http://proxy.example:3128',
      NO_PROXY: 'git.internal,tether-relay.tether.svc,127.0.0.1,localhost',
      NODE_USE_ENV_PROXY: '1',
    });
    expect(env).not.toHaveProperty('HTTP_PROXY');
    expect(pod.metadata!.labels).toMatchObject({ team: 'web', 'app.kubernetes.io/component': 'runner' });
    expect(pod.spec).toMatchObject({
      priorityClassName: 'agents',
      nodeSelector: { pool: 'agents' },
      tolerations,
      topologySpreadConstraints: spread,
      securityContext: { runAsUser: 1000680000, runAsGroup: 1000680000, fsGroup: 1000680000 },
    });
    expect(pod.spec!.initContainers![0]!.securityContext!.runAsUser).toBe(1000680001);
  });

  it("passes the image's uids and nothing else by default: the Pod is the one the defaults always built", async () => {
    const objects = await render(BASE);
    expect(controllerData(objects)).toMatchObject({
      TETHER_RUNNER_UID: '1000',
      TETHER_RUNNER_AGENT_UID: '1001',
      TETHER_RUNNER_GID: '1000',
    });
    expect(
      Object.keys(controllerData(objects)).filter((k) => /CLAUDE|ANTHROPIC|PROXY|PRIORITY|POD_LABELS/.test(k)),
    ).toEqual([]);
    const withoutUids = Object.fromEntries(
      Object.entries(controllerData(objects)).filter(([k]) => !/_UID|_GID/.test(k)),
    );
    expect(runnerPodOf(objects)).toEqual(desiredPod(session, loadConfig(withoutUids)));
    expect(runnerPodOf(objects).spec!.securityContext).toMatchObject({ runAsUser: 1000, fsGroup: 1000 });
    expect(egressOf(objects)).toHaveLength(3);
  });

  it("appends networkPolicy.extraEgress to the runner's egress rules", async () => {
    const egress = egressOf(await render(configured));
    expect(egress).toHaveLength(5);
    expect(egress[4]).toEqual(extraEgress[0]);
  });
});

describe('Deployments: scheduling and security contexts', () => {
  it.each(['controller', 'relay', 'egress'])(
    '%s gets priorityClassName, topologySpreadConstraints and podLabels',
    async (c) => {
      const template = podTemplate(find(await render(deployments), 'Deployment', `-${c}`));
      expect(template.metadata.labels).toMatchObject({ team: 'web', 'app.kubernetes.io/component': c });
      expect(template.spec).toMatchObject({ priorityClassName: 'tether', topologySpreadConstraints: spread });
    },
  );

  it('renders without runAsUser, runAsGroup or fsGroup (OpenShift assigns them), still restricted', async () => {
    const openshift = { runAsUser: null, runAsGroup: null, fsGroup: null };
    const objects = await render({
      ...BASE,
      controller: { podSecurityContext: openshift },
      relay: { ...BASE.relay, podSecurityContext: openshift },
    });
    for (const c of ['controller', 'relay']) {
      const spec = podTemplate(find(objects, 'Deployment', `-${c}`)).spec;
      expect(spec.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect((spec.containers[0] as Record<string, unknown>).securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
    }
  });

  it.each([
    [{ controller: { securityContext: { privileged: true } } }, /\/controller\/securityContext\/privileged/],
    [
      { relay: { securityContext: { allowPrivilegeEscalation: true } } },
      /\/relay\/securityContext\/allowPrivilegeEscalation/,
    ],
    [
      { controller: { securityContext: { capabilities: { add: ['NET_ADMIN'] } } } },
      /\/controller\/securityContext\/capabilities\/add/,
    ],
    [
      { controller: { securityContext: { capabilities: { drop: ['NET_RAW'] } } } },
      /\/controller\/securityContext\/capabilities\/drop/,
    ],
    [{ relay: { podSecurityContext: { runAsNonRoot: false } } }, /\/relay\/podSecurityContext\/runAsNonRoot/],
    [{ controller: { podSecurityContext: { runAsUser: 0 } } }, /\/controller\/podSecurityContext\/runAsUser/],
    [
      { controller: { podSecurityContext: { seccompProfile: null } } },
      /\/controller\/podSecurityContext': missing property 'seccompProfile'/,
    ],
    [
      { controller: { podSecurityContext: { sysctls: [{ name: 'kernel.x', value: '1' }] } } },
      /\/controller\/podSecurityContext': additional properties 'sysctls'/,
    ],
    [{ runner: { securityContext: { agentRunAsUser: 1000 } } }, /agentRunAsUser must differ/],
    [{ runner: { securityContext: { runAsUser: null } } }, /\/runner\/securityContext': missing property 'runAsUser'/],
    [{ runner: { podLabels: { 'app.kubernetes.io/component': 'x' } } }, /runner.podLabels.*Tether's own/],
    [{ controller: { podLabels: { 'tether.dev/session': 'x' } } }, /controller.podLabels.*Tether's own/],
    [{ runner: { anthropicBaseUrl: 'http://gateway.example' } }, /\/runner\/anthropicBaseUrl/],
    [{ runner: { anthropicBaseUrl: 'https://gateway.example/?key=1' } }, /\/runner\/anthropicBaseUrl/],
    [{ runner: { proxy: { httpsProxy: 'proxy:3128' } } }, /\/runner\/proxy\/httpsProxy/],
    [{ networkPolicy: { extraEgress: [{ from: [] }] } }, /\/networkPolicy\/extraEgress\/0/],
  ])('refuses %j', async (values, message) => {
    expect(await renderError({ ...values, relay: { ...BASE.relay, ...(values as { relay?: object }).relay } })).toMatch(
      message,
    );
  });
});
