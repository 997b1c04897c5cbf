// charts/tether through the real helm: lint, template with default and non-default values,
// and values the schema or the templates must refuse with a clear message.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CHART_DIR,
  HELM_SETUP_TIMEOUT,
  everythingOn,
  find,
  helm,
  helmBin,
  podTemplate,
  render,
  renderError,
  withValueArgs,
  type KubeObject,
} from './chart-render.ts';
import { RELAY_UPLOAD_PATH, RUNNER_IDENTITY_PREFIX } from '../../common/session/names.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

type IngressObject = {
  spec: {
    ingressClassName: string;
    tls: unknown[];
    rules: { host: string; http: { paths: { path: string; pathType: string }[] } }[];
  };
};

/** Whether the Ingress sends a request path to the relay (Exact, or Prefix matched element by element). */
function routed(ingress: IngressObject, path: string): boolean {
  const elements = (p: string) => p.split('/').filter(Boolean);
  return ingress.spec.rules[0]!.http.paths.some((rule) =>
    rule.pathType === 'Exact'
      ? rule.path === path
      : elements(rule.path).every((element, i) => elements(path)[i] === element),
  );
}

const kinds = (objects: KubeObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
const CLUSTER_SCOPED = new Set([
  'ClusterRole',
  'ClusterRoleBinding',
  'RuntimeClass',
  'CustomResourceDefinition',
  'Namespace',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);
/** What the runners use lives in their namespace, not the release's. */
const IN_RUNNER_NAMESPACE = [
  'NetworkPolicy/tether-runner',
  'Pod/tether-runner-secret-test',
  'Role/tether-controller',
  'Role/tether-egress',
  'RoleBinding/tether-controller',
  'RoleBinding/tether-egress',
  'Secret/tether-runner',
];

describe('helm lint', () => {
  // helm lint reports a template's `fail` as "[INFO] Fail: …" and passes: a clean lint has none.
  it.each([
    ['the default values and a publicUrl', {}],
    ['every optional part switched on', everythingOn],
  ])('passes --strict with %s', async (_, values) => {
    const result = await withValueArgs(values, (args) => helm(['lint', '--strict', CHART_DIR, ...args]));
    expect(result.stderr + result.stdout).toContain('0 chart(s) failed');
    expect(result.stderr + result.stdout).not.toContain('Fail:');
    expect(result.code).toBe(0);
  });
});

describe('helm template, default values', () => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render({}, { release: 'tether', namespace: 'agents' });
  });

  it('renders the expected objects', () => {
    expect(kinds(objects)).toEqual([
      'ClusterRole/agents-tether-controller',
      'ClusterRole/agents-tether-relay',
      'ClusterRoleBinding/agents-tether-controller',
      'ClusterRoleBinding/agents-tether-relay',
      'ConfigMap/tether-controller',
      'ConfigMap/tether-dashboard',
      'ConfigMap/tether-egress',
      'ConfigMap/tether-egress-grants',
      'ConfigMap/tether-pull-requests',
      'ConfigMap/tether-relay',
      'ConfigMap/tether-relay-claims',
      'CustomResourceDefinition/sessions.tether.dev',
      'Deployment/tether-controller',
      'Deployment/tether-egress',
      'Deployment/tether-relay',
      'Namespace/agents-runners',
      'NetworkPolicy/tether-egress',
      'NetworkPolicy/tether-runner',
      'PersistentVolumeClaim/tether-relay-media',
      'Pod/tether-relay-test',
      'Pod/tether-runner-secret-test',
      'Role/tether-controller',
      'Role/tether-controller',
      'Role/tether-egress',
      'Role/tether-egress',
      'Role/tether-relay',
      'RoleBinding/tether-controller',
      'RoleBinding/tether-controller',
      'RoleBinding/tether-egress',
      'RoleBinding/tether-egress',
      'RoleBinding/tether-relay',
      'Secret/tether-egress',
      'Secret/tether-relay',
      'Secret/tether-runner',
      'Service/tether-controller-metrics',
      'Service/tether-egress',
      'Service/tether-relay',
      'ServiceAccount/tether-controller',
      'ServiceAccount/tether-egress',
      'ServiceAccount/tether-relay',
      'ValidatingAdmissionPolicy/agents-runners-runner-pods',
      'ValidatingAdmissionPolicy/agents-runners-runner-tokens',
      'ValidatingAdmissionPolicy/agents-tether-egress',
      'ValidatingAdmissionPolicy/agents-tether-sessions',
      'ValidatingAdmissionPolicyBinding/agents-runners-runner-pods',
      'ValidatingAdmissionPolicyBinding/agents-runners-runner-tokens',
      'ValidatingAdmissionPolicyBinding/agents-tether-egress',
      'ValidatingAdmissionPolicyBinding/agents-tether-sessions',
    ]);
  });

  it("admits runner Pods only under the code's runner ServiceAccount prefix (the chart cannot import it)", () => {
    const policy = find(objects, 'ValidatingAdmissionPolicy', 'agents-runners-runner-pods') as unknown as {
      spec: { validations: { expression: string }[] };
    };
    const expressions = policy.spec.validations.map((v) => v.expression);
    expect(expressions).toContain(
      `has(object.spec.serviceAccountName) && object.spec.serviceAccountName.startsWith('${RUNNER_IDENTITY_PREFIX}')`,
    );
  });

  it('puts every namespaced object in the release namespace, what the runners use in theirs, and labels it', () => {
    const namespaced = objects.filter((o) => !CLUSTER_SCOPED.has(o.kind));
    expect(kinds(namespaced.filter((o) => o.metadata.namespace === 'agents-runners'))).toEqual(IN_RUNNER_NAMESPACE);
    for (const o of objects) {
      if (!CLUSTER_SCOPED.has(o.kind))
        expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toMatch(/^agents(-runners)?$/);
      expect(o.metadata.labels?.['app.kubernetes.io/part-of'], `${o.kind}/${o.metadata.name}`).toBe('tether');
    }
  });

  it('runs one controller with leader election and a relay with a media volume', () => {
    const controller = find(objects, 'Deployment', 'controller') as unknown as { spec: { replicas: number } };
    expect(controller.spec.replicas).toBe(1);
    expect(
      (find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> }).data
        .TETHER_LEADER_ELECTION,
    ).toBe('true');
    const relay = podTemplate(find(objects, 'Deployment', 'relay'));
    expect(relay.spec.volumes).toContainEqual({
      name: 'media',
      persistentVolumeClaim: { claimName: 'tether-relay-media' },
    });
    expect((find(objects, 'Deployment', 'relay') as unknown as { spec: { strategy: unknown } }).spec.strategy).toEqual({
      type: 'Recreate',
    });
  });

  it('generates a media signing key, a phone hash key and, without Twilio, a web chat token', () => {
    const secret = find(objects, 'Secret', 'relay') as unknown as { stringData: Record<string, string> };
    expect(secret.stringData.RELAY_MEDIA_SIGNING_KEY).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(secret.stringData.TETHER_PHONE_HASH_KEY).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(secret.stringData.TETHER_PHONE_HASH_KEY).not.toBe(secret.stringData.RELAY_MEDIA_SIGNING_KEY);
    expect(secret.stringData.RELAY_WEB_CHAT_TOKEN).toMatch(/^[A-Za-z0-9]{32}$/);
  });

  it('with egress.enabled=false: gives runner Pods no ingress and no way to cluster ranges or cloud \
metadata', async () => {
    const withoutEgress = await render({ egress: { enabled: false } }, { release: 'tether', namespace: 'agents' });
    const policy = find(withoutEgress, 'NetworkPolicy', 'runner') as unknown as {
      spec: {
        podSelector: unknown;
        policyTypes: string[];
        ingress: unknown[];
        egress: { to: { ipBlock?: { cidr: string; except?: string[] } }[]; ports?: unknown[] }[];
      };
    };
    expect(policy.spec.podSelector).toEqual({
      matchLabels: { 'app.kubernetes.io/component': 'runner', 'app.kubernetes.io/part-of': 'tether' },
    });
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.ingress).toEqual([]);
    const portless = policy.spec.egress.filter((rule) => !rule.ports);
    expect(portless).toHaveLength(1);
    expect(portless[0]!.to).toEqual([
      {
        ipBlock: {
          cidr: '0.0.0.0/0',
          except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
        },
      },
    ]);
  });

  it('renders the CRD from templates/ alone: --include-crds adds no second copy', async () => {
    const withCrds = await render({}, { release: 'tether', namespace: 'agents', includeCrds: true });
    expect(kinds(withCrds)).toEqual(kinds(objects));
  });
});

describe('helm template, every optional part on', () => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render(everythingOn, { release: 'prod', namespace: 'tether' });
  });

  it('adds Ingress, ServiceMonitors and RuntimeClass and creates no Secret for existing ones', () => {
    const names = kinds(objects);
    expect(names).toContain('Ingress/prod-tether-relay');
    expect(names).toContain('ServiceMonitor/prod-tether-controller');
    expect(names).toContain('ServiceMonitor/prod-tether-relay');
    expect(names).toContain('ServiceMonitor/prod-tether-egress');
    expect(names).toContain('RuntimeClass/gvisor');
    expect(names).toEqual(
      expect.arrayContaining(['PodDisruptionBudget/prod-tether-controller', 'PodDisruptionBudget/prod-tether-relay']),
    );
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
  });

  it(`exposes only /webhook, /media/ (the relay serves only GET there), /chat and /github/webhook through the \
Ingress; uploads stay in-cluster`, () => {
    const ingress = find(objects, 'Ingress', 'relay') as unknown as IngressObject;
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.tls).toEqual([{ hosts: ['wa.example.org'], secretName: 'wa-tls' }]);
    expect(ingress.spec.rules[0]!.http.paths.map((p) => `${p.pathType} ${p.path}`)).toEqual([
      'Exact /webhook',
      'Prefix /media/',
      'Prefix /chat',
      'Exact /github/webhook',
    ]);
    for (const path of [`${RELAY_UPLOAD_PATH}/tether/s1/diff.png`, '/metrics', '/healthz', '/readyz', '/'])
      expect(routed(ingress, path), path).toBe(false);
    for (const path of [
      '/webhook',
      '/media/tether/s1/diff.png',
      '/chat',
      '/chat/events',
      '/chat/send',
      '/github/webhook',
    ])
      expect(routed(ingress, path), path).toBe(true);
  });

  it("gives runners the relay's in-cluster Service URL for uploads", () => {
    const config = find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> };
    expect(config.data.TETHER_RELAY_URL).toBe('http://prod-tether-relay.tether.svc:8443');
  });

  it('leaves /chat out of the Ingress when the web chat is off', async () => {
    const chatOff = await render(
      { ...everythingOn, relay: { ...everythingOn.relay, webChat: { enabled: false } } },
      { release: 'prod', namespace: 'tether' },
    );
    const ingress = find(chatOff, 'Ingress', 'relay') as unknown as IngressObject;
    expect(ingress.spec.rules[0]!.http.paths.map((p) => `${p.pathType} ${p.path}`)).toEqual([
      'Exact /webhook',
      'Prefix /media/',
      'Exact /github/webhook',
    ]);
  });

  it("leaves GitHub's webhook out of the Ingress when the install has no secret for it", async () => {
    const noHook = await render(
      { ...everythingOn, github: { ...everythingOn.github, webhookSecret: { existingSecret: '' } } },
      { release: 'prod', namespace: 'tether' },
    );
    const ingress = find(noHook, 'Ingress', 'relay') as unknown as IngressObject;
    expect(routed(ingress, '/github/webhook')).toBe(false);
    expect(routed(ingress, '/webhook')).toBe(true);
  });

  it('points every ServiceMonitor at a Service port of its component', () => {
    for (const component of ['controller', 'relay', 'egress']) {
      const monitor = find(objects, 'ServiceMonitor', component) as unknown as {
        metadata: { labels: Record<string, string> };
        spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
      };
      expect(monitor.metadata.labels.release).toBe('prometheus');
      const services = objects.filter(
        (o) =>
          o.kind === 'Service' &&
          Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v),
      );
      expect(services, component).toHaveLength(1);
      const ports = (services[0] as unknown as { spec: { ports: { name: string }[] } }).spec.ports.map((p) => p.name);
      expect(ports).toContain(monitor.spec.endpoints[0]!.port);
      expect(monitor.spec.endpoints[0]!.path).toBe('/metrics');
    }
  });

  it('reads credentials from the named Secrets with the configured keys', () => {
    const env = podTemplate(find(objects, 'Deployment', 'relay')).spec.containers[0]!.env!;
    const refs = Object.fromEntries(env.filter((e) => e.valueFrom).map((e) => [e.name, e.valueFrom!.secretKeyRef]));
    expect(refs).toEqual({
      TWILIO_ACCOUNT_SID: { name: 'my-twilio', key: 'sid' },
      TWILIO_AUTH_TOKEN: { name: 'my-twilio', key: 'token' },
      RELAY_MEDIA_SIGNING_KEY: { name: 'my-relay', key: 'RELAY_MEDIA_SIGNING_KEY' },
      RELAY_WEB_CHAT_TOKEN: { name: 'my-relay', key: 'RELAY_WEB_CHAT_TOKEN' },
      TETHER_PHONE_HASH_KEY: { name: 'my-relay', key: 'TETHER_PHONE_HASH_KEY' },
      TETHER_GITHUB_WEBHOOK_SECRET: { name: 'my-github-webhook', key: 'GITHUB_WEBHOOK_SECRET' },
    });
    const controller = podTemplate(find(objects, 'Deployment', 'controller')).spec.containers[0]!.env!;
    expect(controller.find((e) => e.name === 'TETHER_PHONE_HASH_KEY')?.valueFrom?.secretKeyRef).toEqual({
      name: 'my-relay',
      key: 'TETHER_PHONE_HASH_KEY',
    });
    expect(
      (find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> }).data
        .TETHER_RUNNER_SECRET,
    ).toBe('my-runner');
  });

  it('uses the given registry, tag and pull secrets for every container', () => {
    for (const name of ['controller', 'relay']) {
      const template = podTemplate(find(objects, 'Deployment', name));
      expect(template.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
      expect((template.spec.containers[0] as unknown as { image: string }).image).toBe(
        `registry.example.com/tether/tether-${name}:1.2.3`,
      );
    }
    expect(
      (find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> }).data
        .TETHER_RUNNER_IMAGE,
    ).toBe('registry.example.com/tether/tether-runner:1.2.3');
  });

  it('lets runners reach the given API server addresses (no DNS: egress is on) and the egress proxy the given \
DNS, those addresses and the IPv6 internet', () => {
    type Policy = { spec: { egress: { to: unknown[]; ports?: unknown[] }[] } };
    const runner = find(objects, 'NetworkPolicy', 'runner') as unknown as Policy;
    const egress = find(objects, 'NetworkPolicy', 'egress') as unknown as Policy;
    const apiServer = { to: [{ ipBlock: { cidr: '203.0.113.10/32' } }], ports: [{ protocol: 'TCP', port: 443 }] };
    expect(runner.spec.egress[0]).toEqual(apiServer);
    expect(JSON.stringify(runner)).not.toContain('169.254.20.10');
    expect(egress.spec.egress[0]!.to).toContainEqual({ ipBlock: { cidr: '169.254.20.10/32' } });
    expect(egress.spec.egress[1]).toEqual(apiServer);
    expect(egress.spec.egress[2]!.to).toContainEqual({
      ipBlock: {
        cidr: '::/0',
        except: ['::1/128', '::/128', 'fc00::/7', 'fe80::/10', '64:ff9b::/96', '64:ff9b:1::/48'],
      },
    });
    expect(JSON.stringify(runner)).not.toContain('::/0');
  });

  it('puts the dashboard in the Grafana namespace with the sidecar label', () => {
    const dashboard = find(objects, 'ConfigMap', 'dashboard');
    expect(dashboard.metadata.namespace).toBe('monitoring');
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1', team: 'dev' });
  });
});

describe('values the chart refuses', () => {
  it.each([
    [{ relay: { publicUrl: 'tether.example.com' } }, '/relay/publicUrl'],
    [{ relay: { allowedNumbers: ['4155550123'] } }, '/relay/allowedNumbers/0'],
    [{ relay: { replicaz: 2 } }, 'replicaz'],
    [{ controller: { replicas: 0 } }, '/controller/replicas'],
    [{ sessions: { timeouts: { run: '1 hour' } } }, '/sessions/timeouts/run'],
    [{ secrets: { twilio: { accountSid: 'not-a-sid' } } }, '/secrets/twilio/accountSid'],
    [{ secrets: { relay: { mediaSigningKey: 'short' } } }, '/secrets/relay/mediaSigningKey'],
    [{ secrets: { relay: { phoneHashKey: 'short' } } }, '/secrets/relay/phoneHashKey'],
    [{ runner: { workspace: { size: 'ten gigs' } } }, '/runner/workspace/size'],
    [{ networkPolicy: { blockedCidrs: ['fd00::/8'] } }, '/networkPolicy/blockedCidrs/0'],
    [{ relay: { service: { type: 'ExternalName' } } }, '/relay/service/type'],
  ])('schema: %j names %s', async (values, path) => {
    const message = await renderError(values);
    expect(message).toContain("values don't meet the specifications of the schema");
    expect(message).toContain(path);
  });

  it.each([
    [{ controller: { replicas: 2, leaderElection: { enabled: false } } }, 'controller.leaderElection.enabled=true'],
    [{ relay: { replicas: 2 } }, 'accessMode=ReadWriteMany'],
    [{ relay: { twilio: { whatsappFrom: 'whatsapp:+14155238886' } } }, 'no Twilio credentials'],
    [{ secrets: { twilio: { accountSid: `AC${'0'.repeat(32)}`, authToken: 'x' } } }, 'relay.twilio.whatsappFrom'],
  ])('templates: %j → %s', async (values, hint) => {
    expect(await renderError(values)).toContain(hint);
  });
});
