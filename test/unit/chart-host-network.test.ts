// The host-network / loopback test tier's values (local/kubelet-node/chart-values.ts): every Pod on
// the node's network with loopback addresses, through the controller's config down to the runner
// Pod — and none of it in a default install.
import { beforeAll, describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig as loadControllerConfig } from '../../controller/config.ts';
import { tierChartValues } from '../../local/kubelet-node/chart-values.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';
import {
  HELM_SETUP_TIMEOUT,
  controllerData,
  find,
  helmBin,
  podTemplate,
  render,
  renderError,
  type KubeObject,
  type PodTemplate,
} from './chart-render.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const tier = tierChartValues({
  apiServerPort: 6443,
  relayPort: 18080,
  controllerMetricsPort: 19090,
  egressPort: 13128,
  image: { registry: 'tether.local', tag: 'dev' },
});

interface ProbedContainer {
  env?: Array<{ name: string; value?: string }>;
  readinessProbe?: { httpGet?: { host?: string; port: string } };
  livenessProbe?: { httpGet?: { host?: string; port: string } };
  ports?: Array<{ containerPort: number }>;
}
const container = (template: PodTemplate) => template.spec.containers[0] as unknown as ProbedContainer;
const envOf = (template: PodTemplate) =>
  Object.fromEntries((container(template).env ?? []).map((e) => [e.name, e.value]));
/** The controller's ConfigMap, and the key the relay's Secret gives it. */
const controllerEnv = controllerData;

describe('chart values of the host-network / loopback test tier', () => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render(tier, { release: 'tether', namespace: 'agents' });
  });

  it(`puts the controller and the relay on the host network, \
API server and probes on loopback, on their own ports`, () => {
    const ports = new Set<number>();
    for (const component of ['controller', 'relay', 'egress']) {
      const template = podTemplate(find(objects, 'Deployment', component));
      expect(template.spec.hostNetwork, component).toBe(true);
      expect(envOf(template), component).toMatchObject({
        KUBERNETES_SERVICE_HOST: '127.0.0.1',
        KUBERNETES_SERVICE_PORT: '6443',
      });
      for (const probe of [container(template).readinessProbe, container(template).livenessProbe])
        expect(probe?.httpGet?.host, component).toBe('127.0.0.1');
      for (const { containerPort } of container(template).ports ?? []) ports.add(containerPort);
    }
    expect([...ports].sort()).toEqual([13128, 18080, 19090]);
  });

  it('has the egress proxy listen on loopback only, and gives runners its loopback URL', () => {
    const data = (find(objects, 'ConfigMap', '-egress') as unknown as { data: Record<string, string> }).data;
    expect(data).toMatchObject({ TETHER_EGRESS_PORT: '13128', TETHER_EGRESS_LISTEN: '127.0.0.1' });
    expect(data.TETHER_EGRESS_BLOCKED_CIDRS).not.toContain('127.0.0.0/8');
    const config = loadControllerConfig({ ...controllerEnv(objects), POD_NAME: 'tether-controller-0' });
    expect(config.egress?.url).toBe('http://127.0.0.1:13128');
  });

  it(`gives runners the relay on loopback, the host network and the API server address, through the controller's \
config`, () => {
    const config = loadControllerConfig({ ...controllerEnv(objects), POD_NAME: 'tether-controller-0' });
    expect(config.relayUrl).toBe('http://127.0.0.1:18080');
    expect(config.hostNetwork).toEqual({ apiServer: { host: '127.0.0.1', port: '6443' } });
    const pod = desiredPod(testSession(), {
      ...unitConfig(),
      relayUrl: config.relayUrl,
      hostNetwork: config.hostNetwork,
    });
    expect(pod.spec!.hostNetwork).toBe(true);
    const runnerEnv = Object.fromEntries(pod.spec!.containers[0]!.env!.map((e) => [e.name, e.value]));
    expect(runnerEnv).toMatchObject({
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: '6443',
      TETHER_RELAY_URL: 'http://127.0.0.1:18080',
    });
    expect(pod.spec!.initContainers![0]!.env!.map((e) => e.name)).not.toContain('KUBERNETES_SERVICE_HOST');
  });

  it('is off by default: cluster network, the Service address, probes on the Pod IP', async () => {
    const defaults = await render({}, { release: 'tether', namespace: 'agents' });
    for (const component of ['controller', 'relay', 'egress']) {
      const template = podTemplate(find(defaults, 'Deployment', component));
      expect(template.spec.hostNetwork, component).toBeUndefined();
      expect(envOf(template), component).not.toHaveProperty('KUBERNETES_SERVICE_HOST');
      expect(container(template).readinessProbe?.httpGet).not.toHaveProperty('host');
    }
    const config = loadControllerConfig({ ...controllerEnv(defaults), POD_NAME: 'tether-controller-0' });
    expect(config.hostNetwork).toBeUndefined();
    expect(desiredPod(testSession(), unitConfig()).spec).not.toHaveProperty('hostNetwork');
  });

  it('refuses an API server address that is not host:port', async () => {
    expect(await renderError({ hostNetwork: { enabled: true, apiServer: 'https://127.0.0.1:6443' } })).toMatch(
      /apiServer/,
    );
    expect(() =>
      loadControllerConfig({
        TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
        TETHER_RUNNER_HOST_NETWORK: 'true',
        TETHER_RUNNER_API_SERVER: '127.0.0.1',
      }),
    ).toThrow(/TETHER_RUNNER_API_SERVER/);
  });
});
