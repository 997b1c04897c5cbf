// The chart installed with helm onto the kubelet node tier, its images loaded into the tier's
// containerd, driven as a user would: a fake Twilio, the GitHub stand-in and a git forge over
// HTTP, all on 127.0.0.1 (the Pods are on the host network, so loopback is theirs too).
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { SessionClient } from '../../common/kube/sessions.ts';
import type { Session } from '../../common/session/schema.ts';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { tierChartValues } from '../../local/kubelet-node/chart-values.ts';
import { startGitHubStandIn, type GitHubStandIn } from '../../local/github/stand-in.ts';
import { ensureSampleRepo } from '../../local/sample-repo.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { twilioPhone, type Phone } from './e2e.ts';
import { serveGitOverHttp, type GitHttpForge } from '../../local/git-forge.ts';
import { BUILT_IMAGES } from './config.ts';
import { dockerHost, imageName } from './images.ts';

const run = promisify(execFile);

const COMPONENTS = ['controller', 'relay', 'runner'] as const;
export const GITHUB_TOKEN = 'node-tier-forge-token';
/**
 * On the install's deny list: the egress proxy refuses it before any lookup, so a test reaches it with
 * no traffic out.
 */
export const DENIED_HOST = 'denied.tether.test';

export interface ChartOnNode {
  namespace: string;
  /** where the chart puts runner Pods (runner.namespace's default: `<release namespace>-runners`) */
  runnerNamespace: string;
  kc: KubeConfig;
  twilio: FakeTwilio;
  github: GitHubStandIn;
  forge: GitHttpForge;
  /** The egress proxy's port on 127.0.0.1 (its /metrics too). */
  egressPort: number;
  phone(number: string): Phone;
  sessions(): Promise<Session[]>;
  stop(): Promise<void>;
}

/**
 * `docker save` of the three images `make test-node` built, from the engine scripts/ensure-docker.sh names, into
 * containerd's CRI namespace.
 */
export async function loadImages(): Promise<void> {
  const images = COMPONENTS.map(imageName);
  const command = `/usr/bin/docker save ${images.join(' ')} | ctr --address "$SOCKET" -n k8s.io images import -`;
  await new Promise<void>((resolve, reject) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', command], {
      env: { ...process.env, DOCKER_HOST: dockerHost(), SOCKET: inject('containerdSocket') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`loading the images failed (${code}): ${stderr}`)),
    );
  });
}

/** A bare sample repository (the serving user's) served over HTTP. */
export async function sampleForge(dir: string): Promise<{ forge: GitHttpForge; repoUrl: string }> {
  await ensureSampleRepo(dir);
  const forge = await serveGitOverHttp(dir, GITHUB_TOKEN, { record: true });
  return { forge, repoUrl: `${forge.origin}/acme/sample.git` };
}

function values(o: {
  twilio: FakeTwilio;
  github: GitHubStandIn;
  repoUrl: string;
  numbers: string[];
  relayPort: number;
  metricsPort: number;
  egressPort: number;
  apiServerPort: number;
}) {
  const tier = tierChartValues({
    apiServerPort: o.apiServerPort,
    relayPort: o.relayPort,
    controllerMetricsPort: o.metricsPort,
    egressPort: o.egressPort,
    image: BUILT_IMAGES,
  });
  return {
    ...tier,
    secrets: {
      twilio: { accountSid: o.twilio.accountSid, authToken: o.twilio.authToken },
      runner: { githubToken: GITHUB_TOKEN },
    },
    relay: {
      ...tier.relay,
      allowedNumbers: o.numbers,
      repo: { url: o.repoUrl, baseBranch: 'main' },
      twilio: { whatsappFrom: 'whatsapp:+14155238886', apiUrl: o.twilio.url },
      progressBatch: '1s',
    },
    runner: { ...tier.runner, githubApiUrl: o.github.url },
    egress: { ...tier.egress, deny: [DENIED_HOST] },
  };
}

export async function installChart(numbers: string[]): Promise<ChartOnNode> {
  const namespace = 'tether';
  const dir = await mkdtemp(join(tmpdir(), 'tether-chart-on-node-'));
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfig'));
  const [twilio, github, { forge, repoUrl }] = await Promise.all([
    startFakeTwilio(),
    startGitHubStandIn(),
    sampleForge(join(dir, 'remotes')),
  ]);
  const relayPort = await freePort();
  const egressPort = await freePort();
  const apiServerPort = Number(new URL(kc.getCurrentCluster()!.server).port);
  const valuesFile = join(dir, 'values.json');
  await writeFile(
    valuesFile,
    JSON.stringify(
      values({
        twilio,
        github,
        repoUrl,
        numbers,
        relayPort,
        metricsPort: await freePort(),
        egressPort,
        apiServerPort,
      }),
    ),
  );
  const { stdout: helm } = await run('scripts/ensure-helm.sh');
  await run(
    helm.trim(),
    [
      'install',
      'tether',
      'charts/tether',
      '--namespace',
      namespace,
      '--create-namespace',
      '--kubeconfig',
      inject('kubeconfig'),
      '-f',
      valuesFile,
      '--wait',
      '--timeout',
      '5m',
    ],
    { maxBuffer: 1 << 24 },
  );
  const client = new SessionClient(connectionFromKubeConfig(kc));
  return {
    namespace,
    runnerNamespace: `${namespace}-runners`,
    kc,
    twilio,
    github,
    forge,
    egressPort,
    phone: (number) => twilioPhone(twilio, `http://127.0.0.1:${relayPort}`, number),
    sessions: async () => (await client.list(namespace)).items,
    async stop() {
      await run(helm.trim(), [
        'uninstall',
        'tether',
        '--namespace',
        namespace,
        '--kubeconfig',
        inject('kubeconfig'),
        '--wait',
      ]).catch(() => undefined);
      await Promise.all([twilio.close(), github.close(), forge.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
