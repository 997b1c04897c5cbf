// The chart against the real kube-apiserver (Kubernetes 1.34, local/control-plane): every object it
// renders — defaults with a publicUrl, and docs/examples/values-cloud.yaml — passes a server-side
// dry run with strict field validation (the schema check kubeconform would do, without its
// downloads); and what `helm uninstall` leaves behind: the runner namespace and its workspaces.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { adminKubeConfig, deleteNamespace, installSessionCrd } from '../support/cluster.ts';
import { CHART_DIR, TEST_API_SERVER_CIDRS, helm, helmBin, parseObjects, renderText } from '../unit/chart-render.ts';
import {
  deleteClusterScoped,
  enforceRestricted,
  helmRelease,
  kubectlOk,
  kubectlResult,
  manifestFile,
  restrictedNamespace,
  serverDryRun,
} from './chart-cluster.ts';

const EXAMPLE = 'docs/examples/values-cloud.yaml';
let kc: KubeConfig;
let checked: string;
let removed: string;
let prepared: string;

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  [checked, removed, prepared] = await Promise.all([
    restrictedNamespace(kc, 'schema'),
    restrictedNamespace(kc, 'uninstall'),
    restrictedNamespace(kc, 'prepared'),
  ]);
  // A dry run creates nothing: the runner namespace must exist for what goes in it, restricted as the chart makes it.
  await kubectlOk(['create', 'namespace', `${checked}-runners`]);
  await enforceRestricted(`${checked}-runners`);
}, 900_000);
afterAll(async () => {
  await deleteClusterScoped([checked, removed, prepared]);
  await Promise.all(
    [checked, removed, prepared].flatMap((n) => [deleteNamespace(kc, n), deleteNamespace(kc, `${n}-runners`)]),
  );
});

describe('the API server this check runs against', () => {
  it('is Kubernetes 1.34', async () => {
    const { serverVersion } = JSON.parse((await kubectlOk(['version', '-o', 'json'])).stdout) as {
      serverVersion: { major: string; minor: string };
    };
    expect(`${serverVersion.major}.${serverVersion.minor}`).toBe('1.34');
  });
});

describe.each([
  ['the default values with a publicUrl', []],
  [
    'docs/examples/values-cloud.yaml',
    // What the example leaves to the command line.
    [
      '-f',
      EXAMPLE,
      '--set',
      'relay.twilio.whatsappFrom=whatsapp:+14155238886',
      '--set',
      'relay.repo.url=https://github.com/acme/web.git',
      '--set-string',
      'relay.allowedNumbers={+14155550123}',
    ],
  ],
])('%s', (_, files: string[]) => {
  let manifest: string;
  beforeAll(async () => {
    const text = await renderText(
      {},
      // The example's fixed runner namespace would be shared between runs: the test's own instead.
      { namespace: checked, includeCrds: true, extraArgs: [...files, '--set', `runner.namespace=${checked}-runners`] },
    );
    manifest = manifestFile(parseObjects(text));
  });

  it('passes helm lint --strict', async () => {
    const result = await helm([
      'lint',
      '--strict',
      CHART_DIR,
      '--set',
      'relay.publicUrl=https://tether.example.com',
      '--set',
      `networkPolicy.apiServer.cidrs={${TEST_API_SERVER_CIDRS.join(',')}}`,
      ...files,
    ]);
    expect(result.stdout + result.stderr).not.toContain('Fail:');
    expect(result.code).toBe(0);
  });

  it('passes a server-side dry run with strict field validation, helm test Pods included', async () => {
    const result = await serverDryRun(manifest);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('deployment.apps/tether-relay serverside-applied (server dry run)');
    expect(result.stdout).toContain('pod/tether-runner-secret-test serverside-applied (server dry run)');
  });
});

describe('strict field validation is live', () => {
  it('refuses a field the Kubernetes schema does not have', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'typo', namespace: checked },
      spec: { containers: [{ name: 'c', image: 'busybox', imagePullPolcy: 'Always' }] },
    };
    const result = await serverDryRun(manifestFile([pod]));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('imagePullPolcy');
  });
});

describe('helm install, then helm uninstall', () => {
  const runners = () => `${removed}-runners`;
  let notes: string;
  const given = { secrets: { relay: { webChatToken: 'w'.repeat(16) } } };
  const helmAdmin = (args: string[]) => helm([...args, '-n', removed, '--kubeconfig', inject('kubeconfig')]);
  beforeAll(async () => {
    notes = (await helmRelease('install', 'tether', removed, given)).stdout;
  });

  it('records the values as given (the Secrets write nothing back) and upgrades with --reuse-values', async () => {
    const values = await helmAdmin(['get', 'values', 'tether', '-o', 'json']);
    expect(JSON.parse(values.stdout)).toEqual({
      ...given,
      crds: { install: false }, // helmRelease's: the suite's files share one CRD
      relay: { publicUrl: 'https://tether.example.com' },
      networkPolicy: { apiServer: { cidrs: TEST_API_SERVER_CIDRS } }, // REQUIRED_VALUES': none is published here
    });
    const upgrade = await helmAdmin(['upgrade', 'tether', CHART_DIR, '--reuse-values']);
    expect(upgrade.code, upgrade.stderr).toBe(0);
  });

  it('prints the webhook URL, warns that the runner has no model key, and names the troubleshooting table', () => {
    expect(notes).toContain('https://tether.example.com/webhook');
    expect(notes).toContain('WARNING: the runner has no model key.');
    expect(notes).toContain('docs/troubleshooting.md');
  });

  it('leaves the runner namespace and its workspaces; installing again takes them over', async () => {
    // A phone's workspace, as the controller makes it.
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'ws-0123456789abcdef', namespace: runners() },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    await kubectlOk(['create', '-f', manifestFile([claim])]);
    const uninstall = await helmAdmin(['uninstall', 'tether']);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(uninstall.stdout).toContain('These resources were kept due to the resource policy:');
    expect(uninstall.stdout).toContain(`[Namespace] ${runners()}\n`);
    const namespace = JSON.parse((await kubectlOk(['get', 'namespace', runners(), '-o', 'json'])).stdout) as {
      status: { phase: string };
    };
    expect(namespace.status.phase).toBe('Active');
    await kubectlOk(['get', 'pvc', claim.metadata.name, '-n', runners()]);
    expect((await kubectlResult(['get', 'deployment', 'tether-relay', '-n', removed])).code).not.toBe(0);
    expect((await kubectlResult(['get', 'secret', 'tether-runner', '-n', runners()])).code).not.toBe(0);

    await helmRelease('install', 'tether', removed, given);
    await kubectlOk(['get', 'secret', 'tether-runner', '-n', runners()]);
    await kubectlOk(['get', 'pvc', claim.metadata.name, '-n', runners()]);
  });
});

describe('the runner namespace and Secret made before install (runner.createNamespace=false)', () => {
  const runners = () => `${prepared}-runners`;
  let notes: string;
  beforeAll(async () => {
    // As docs/chart.md, "Secrets and transports", says to.
    await kubectlOk(['create', 'namespace', runners()]);
    await enforceRestricted(runners());
    await kubectlOk([
      'create',
      'secret',
      'generic',
      'my-runner',
      '-n',
      runners(),
      '--from-literal=ANTHROPIC_API_KEY=sk-test',
    ]);
    const values = { runner: { createNamespace: false }, secrets: { runner: { existingSecret: 'my-runner' } } };
    notes = (await helmRelease('install', 'tether', prepared, values)).stdout;
  });

  it('installs with it: the controller gives runner Pods that Secret, NOTES says it cannot look inside', async () => {
    const config = JSON.parse(
      (await kubectlOk(['get', 'configmap', 'tether-controller', '-n', prepared, '-o', 'json'])).stdout,
    ) as { data: Record<string, string> };
    expect(config.data).toMatchObject({ TETHER_RUNNER_NAMESPACE: runners(), TETHER_RUNNER_SECRET: 'my-runner' });
    expect(notes).toContain('the chart cannot check that it holds ANTHROPIC_API_KEY');
    expect(notes).not.toContain('WARNING: the runner has no model key');
  });

  it('and helm uninstall leaves both alone', async () => {
    const uninstall = await helm(['uninstall', 'tether', '-n', prepared, '--kubeconfig', inject('kubeconfig')]);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    await kubectlOk(['get', 'secret', 'my-runner', '-n', runners()]);
  });
});
