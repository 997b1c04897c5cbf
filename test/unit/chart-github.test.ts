// The chart's GitHub parts: the App's private key reaches the controller alone (no runner or relay
// Pod mounts it, no ConfigMap holds it), the relay mounts its token Secret, the runner admission
// policy lets only the runner container mount a Pod's own token, the Secret-write policy exists only
// with an App, and the loop's settings reach the relay.
import { describe, expect, it } from 'vitest';
import { everythingOn, find, podTemplate, render, renderError, type KubeObject } from './chart-render.ts';

const KEY = '-----BEGIN RSA PRIVATE KEY-----\nMIIEchartcanaryKEYBODY0000\n-----END RSA PRIVATE KEY-----\n';
const APP = { github: { app: { id: '11', installationId: '22', privateKey: KEY } } };

type Volume = { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } };
type Container = { name: string; volumeMounts?: { name: string; mountPath: string }[] };
const spec = (o: KubeObject) =>
  podTemplate(o).spec as unknown as { volumes?: Volume[]; containers: Container[]; initContainers?: Container[] };
const secretVolumes = (o: KubeObject) => (spec(o).volumes ?? []).filter((v) => v.secret);

describe('chart: GitHub', () => {
  it("mounts the App's key into the controller only, and nothing but its own Secret names it", async () => {
    const objects = await render(APP);
    const controller = find(objects, 'Deployment', 'controller');
    const relay = find(objects, 'Deployment', 'relay');
    expect(secretVolumes(controller)).toEqual([
      {
        name: 'github-app',
        secret: {
          secretName: 'tether-github-app',
          items: [{ key: 'private-key.pem', path: 'private-key.pem' }],
          defaultMode: 0o440,
        },
      },
    ]);
    expect(spec(controller).containers[0]!.volumeMounts).toContainEqual({
      name: 'github-app',
      mountPath: '/var/run/secrets/tether/github-app',
      readOnly: true,
    });
    expect(secretVolumes(relay).map((v) => v.secret!.secretName)).toEqual(['tether-relay-github']);
    const carriers = objects.filter((o) => JSON.stringify(o).includes('chartcanaryKEYBODY'));
    expect(carriers.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Secret/tether-github-app']);
    const naming = objects.filter((o) => JSON.stringify(o).includes('tether-github-app'));
    expect(naming.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'Deployment/tether-controller',
      'Secret/tether-github-app',
    ]);
    const config = find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> };
    expect(config.data).toMatchObject({
      TETHER_GITHUB_APP_ID: '11',
      TETHER_GITHUB_APP_INSTALLATION_ID: '22',
      TETHER_GITHUB_APP_PRIVATE_KEY_FILE: '/var/run/secrets/tether/github-app/private-key.pem',
      TETHER_GITHUB_RELAY_SECRET: 'tether-relay-github',
    });
  });

  it(`admits a Secret volume only as the Pod's own token or egress credential and keeps Secret writes to those, \
each kind with its feature only`, async () => {
    const policies = (objects: KubeObject[]) =>
      objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata.name);
    const writes = (objects: KubeObject[]) =>
      JSON.stringify(objects.find((o) => o.metadata.name.endsWith('-runner-tokens')));
    const withApp = await render(APP);
    const pods = JSON.stringify(withApp.find((o) => o.metadata.name.endsWith('-runner-pods')));
    expect(pods).toContain("v.secret.secretName == object.metadata.name + '-github'");
    expect(pods).toContain("v.secret.secretName == object.metadata.name + '-egress'");
    expect(pods).toContain("c.name == 'runner'");
    expect(writes(withApp)).toContain("variables.kind == 'runner-github'");
    expect(writes(withApp)).toContain("variables.kind == 'runner-egress'");
    const egressOnly = await render({});
    expect(policies(egressOnly)).toContain('tether-runners-runner-tokens');
    expect(writes(egressOnly)).not.toContain("variables.kind == 'runner-github'");
    const appOnly = await render({ ...APP, egress: { enabled: false } });
    expect(JSON.stringify(appOnly.find((o) => o.metadata.name.endsWith('-runner-pods')))).not.toContain("+ '-egress'");
    expect(writes(appOnly)).not.toContain("variables.kind == 'runner-egress'");
    expect(policies(await render({ egress: { enabled: false } }))).not.toContain('tether-runners-runner-tokens');
  });

  it("gives the relay the loop's settings, its token file and the webhook secret", async () => {
    const objects = await render(everythingOn);
    const relayConfig = find(objects, 'ConfigMap', 'relay') as unknown as { data: Record<string, string> };
    expect(relayConfig.data).toMatchObject({
      TETHER_PULL_REQUESTS_CONFIGMAP: 'tether-pull-requests',
      TETHER_GITHUB_API_URL: 'https://github.example.com/api/v3',
      TETHER_GITHUB_TOKEN_FILE: '/var/run/secrets/tether/github/token',
      TETHER_GITHUB_MERGE: 'whenGreen',
      TETHER_GITHUB_POLL_SECONDS: '120',
      TETHER_GITHUB_POLL_MAX: '20',
    });
    expect(JSON.parse(relayConfig.data.TETHER_PEOPLE!)).toEqual(everythingOn.people);
    const env = JSON.stringify(podTemplate(find(objects, 'Deployment', 'relay')));
    expect(env).toContain(
      '"name":"TETHER_GITHUB_WEBHOOK_SECRET","valueFrom":{"secretKeyRef":{"name":"my-github-webhook"',
    );
  });

  it('refuses half an App, an App beside a personal token, and a phone that is a number', async () => {
    expect(await renderError({ github: { app: { id: '1' } } })).toContain(
      'github.app needs both id and installationId',
    );
    expect(await renderError({ github: { app: { id: '1', installationId: '2' } } })).toContain(
      'github.app needs its private key',
    );
    expect(await renderError({ github: { ...APP.github, token: { existingSecret: 'pat' } } })).toContain(
      'github.token is the personal-token alternative',
    );
    expect(await renderError({ github: { merge: 'always' } })).toContain('/github/merge');
    expect(await renderError({ people: [{ phone: 14155550123, name: 'Ada' }] })).toContain('/people/0/phone');
  });
});
