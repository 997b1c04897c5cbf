// The README's "Install on a cluster", run as written on the kubelet node tier: `make release` fills
// a real registry on loopback, the quick start's commands (extracted from the README, only
// environment variables given) make the namespaces and Secrets and `helm install` the OCI chart,
// the node pulls the pinned images from that registry, and one signed webhook becomes a pull request.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { tierChartValues } from '../../local/kubelet-node/chart-values.ts';
import { trustLoopbackRegistry } from '../../local/kubelet-node/containerd.ts';
import { startGitHubStandIn, type GitHubStandIn } from '../../local/github/stand-in.ts';
import type { GitHttpForge } from '../../local/git-forge.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { GITHUB_TOKEN, sampleForge } from '../support/chart-on-node.ts';
import { twilioPhone } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { startLoopbackRegistry, type LoopbackRegistry } from '../support/loopback-registry.ts';
import { quickstartBlocks, runBlock } from '../support/quickstart.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const PHONE = '+14155550191';
const TETHER_HOST = 'tether.quickstart.test';
const NAMESPACES = ['tether', 'tether-runners'];

let dir: string;
let registry: LoopbackRegistry;
let twilio: FakeTwilio;
let github: GitHubStandIn;
let forge: GitHttpForge;
let env: Record<string, string>;
let relayPort: number;
const kc = new KubeConfig();

const kubectl = (...args: string[]) =>
  run(join(inject('binDir'), 'kubectl'), ['--kubeconfig', inject('kubeconfig'), ...args], { maxBuffer: 1 << 24 });

/** What another node test (or an earlier run) left in the quick start's namespaces. */
async function clearNamespaces(): Promise<void> {
  const helm = (await run(join(root, 'scripts/ensure-helm.sh'))).stdout.trim();
  await run(helm, ['uninstall', 'tether', '-n', 'tether', '--kubeconfig', inject('kubeconfig'), '--wait']).catch(
    () => undefined,
  );
  await kubectl('delete', 'namespace', ...NAMESPACES, '--ignore-not-found', '--wait=true', '--timeout=180s');
}

/** `helm` and `kubectl` on PATH, as an operator has them. */
async function toolsOnPath(): Promise<string> {
  const bin = join(dir, 'bin');
  await mkdir(bin);
  await symlink((await run(join(root, 'scripts/ensure-helm.sh'))).stdout.trim(), join(bin, 'helm'));
  await symlink(join(inject('binDir'), 'kubectl'), join(bin, 'kubectl'));
  return bin;
}

/** The node tier's own values (host network, loopback API server, local volumes, the fakes). */
async function tierValuesFile(): Promise<string> {
  const apiServerPort = Number(new URL(kc.getCurrentCluster()!.server).port);
  const tier = tierChartValues({
    apiServerPort,
    relayPort,
    controllerMetricsPort: await freePort(),
    egressPort: await freePort(),
  });
  const values = {
    ...tier,
    relay: { ...tier.relay, twilio: { apiUrl: twilio.url }, progressBatch: '1s' },
    runner: { ...tier.runner, githubApiUrl: github.url },
  };
  const file = join(dir, 'node-tier-values.json');
  await writeFile(file, JSON.stringify(values));
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-quickstart-'));
  kc.loadFromFile(inject('kubeconfig'));
  await clearNamespaces();
  registry = await startLoopbackRegistry();
  await trustLoopbackRegistry(inject('registryHostsDir'), registry.host);
  const started = Date.now();
  await run('make', ['--no-print-directory', 'release', `IMAGE_REGISTRY=${registry.host}/tether`], {
    cwd: root,
    maxBuffer: 1 << 26,
  });
  console.log(`[quickstart] make release to ${registry.host} in ${Date.now() - started} ms`);
  [twilio, github, { forge }] = await Promise.all([
    startFakeTwilio(),
    startGitHubStandIn({ token: GITHUB_TOKEN }),
    sampleForge(join(dir, 'remotes')),
  ]);
  relayPort = await freePort();
  await mkdir(join(dir, 'home'));
  const version = /^version: *"?([^"\s]+)/m.exec(await readFile(join(root, 'charts/tether/Chart.yaml'), 'utf8'))![1]!;
  env = {
    PATH: `${await toolsOnPath()}:${process.env.PATH}`,
    HOME: join(dir, 'home'),
    KUBECONFIG: inject('kubeconfig'),
    REGISTRY: `${registry.host}/tether`,
    VERSION: version,
    TETHER_HOST,
    REPO_URL: `${forge.origin}/acme/sample.git`,
    MY_PHONE: PHONE,
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
    GITHUB_TOKEN,
    ANTHROPIC_API_KEY: '', // the scripted model
    RUNNER_POD_SECURITY: 'privileged', // runner Pods share the node's network here
    HELM_INSTALL_FLAGS: `--plain-http -f ${await tierValuesFile()}`,
  };
}, 1_800_000);

afterAll(async () => {
  await clearNamespaces().catch(() => undefined);
  await Promise.all([twilio?.close(), github?.close(), forge?.close(), registry?.stop()]);
  await rm(dir, { recursive: true, force: true });
}, 300_000);

describe("the README's quick start", () => {
  it('runs as written on a node that pulls from the registry make release filled, up to a pull request', async () => {
    const blocks = quickstartBlocks(await readFile(join(root, 'README.md'), 'utf8'));
    let installStarted = 0;
    let installOutput = '';
    for (const block of blocks) {
      if (/^helm install /m.test(block)) installStarted = Date.now();
      const { output } = await runBlock(block, env, root, 900_000);
      if (/^helm install /m.test(block)) installOutput = output;
    }
    expect(installStarted).toBeGreaterThan(0);
    expect(installOutput).toContain(`https://${TETHER_HOST}/webhook`);

    // The images came from the registry, by the digests make release pinned.
    const core = kc.makeApiClient(CoreV1Api);
    const pods = (await core.listNamespacedPod({ namespace: 'tether' })).items;
    const relay = pods.find((p) => p.metadata!.labels?.['app.kubernetes.io/component'] === 'relay')!;
    const image = relay.spec!.containers[0]!.image!;
    expect(image).toMatch(new RegExp(`^${registry.host}/tether/tether-relay:[^@]+@sha256:[0-9a-f]{64}$`));
    expect(relay.status!.containerStatuses![0]!.imageID).toContain(image.split('@')[1]);

    const phone = twilioPhone(twilio, `http://127.0.0.1:${relayPort}`, PHONE, `https://${TETHER_HOST}`);
    await phone.send(
      'script:\nprogress: following the README\nwrite: QUICKSTART.md = installed from the README\nsay: done',
    );
    const firstReply = await eventually(
      () => {
        const [reply] = twilio.to(PHONE);
        if (!reply) throw new Error('no reply yet');
        return reply;
      },
      600_000,
      250,
    );
    console.log(
      `[quickstart] helm install → first reply on the phone: ${firstReply.at - installStarted} ms ` +
        `("${firstReply.body.slice(0, 60)}")`,
    );
    const progress = await phone.next(/following the README/, 600_000);
    console.log(
      `[quickstart] helm install → the agent's first progress (runner pulled): ${progress.at - installStarted} ms`,
    );
    const runnerPods = (await core.listNamespacedPod({ namespace: 'tether-runners' })).items;
    expect(runnerPods.map((p) => p.spec!.containers[0]!.image)).toContainEqual(
      expect.stringMatching(new RegExp(`^${registry.host}/tether/tether-runner:[^@]+@sha256:[0-9a-f]{64}$`)),
    );
    await phone.next(/Reply \*approve\*/, 240_000);
    await phone.send('approve');
    await phone.next(/Pull request opened/, 240_000);
    expect(github.pulls).toHaveLength(1);
    expect(github.pulls[0]).toMatchObject({ owner: 'acme', repo: 'sample', base: 'main' });
    expect(forge.requests.some((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack'))).toBe(true);
  }, 1_800_000);
});
