// The controller as a GitHub App against the real API server and the GitHub stand-in: a Session's
// runner Pod gets a token for its one repository (the stand-in refuses it on another, over REST and
// on git push), in a Secret owned by the Pod that only the runner container mounts; the private key
// is in no Pod, Session, Event or log line; the token is renewed before expiry (the stand-in's
// clock then expires the old one); the relay's token Secret is kept too.
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { runnerName } from '../../common/session/names.ts';
import { createController, type Controller } from '../../controller/controller.ts';
import { githubApp } from '../../controller/github-app.ts';
import { keepRelayToken } from '../../controller/relay-token.ts';
import { ANNOTATION_TOKEN_EXPIRES, RENEW_BEFORE_MS } from '../../controller/runner-token.ts';
import { makeAppKeys } from '../../local/github/app-keys.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';
import {
  adminKubeConfig,
  createNamespace,
  deleteNamespace,
  installSessionCrd,
  sessionClient,
} from '../support/cluster.ts';
import { createSession, testConfig } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';

const APP_ID = 5150;
const INSTALLATION = 31;
const keys = makeAppKeys();
/** The key's body, as it would show in any text that carried it. */
const KEY_BODY = keys.privateKeyPem.split('\n')[5]!;
let bench: GitHubWorkbench;
let kc: KubeConfig;
let core: CoreV1Api;
let sessions: SessionClient;
let ns: string;
let runners: string;
let dir: string;
let controller: Controller;
const logLines: string[] = [];

beforeAll(async () => {
  bench = await startGitHubWorkbench({
    more: ['other'],
    app: {
      id: APP_ID,
      publicKey: keys.publicKeyPem,
      installations: [{ id: INSTALLATION, account: 'acme', repositories: ['sample', 'other'] }],
    },
  });
  kc = adminKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  await installSessionCrd(kc);
  [ns, runners] = await Promise.all([createNamespace(kc, 'ghapp'), createNamespace(kc, 'ghapp-run')]);
  sessions = sessionClient(kc);
  dir = mkdtempSync(join(tmpdir(), 'ghapp-key-'));
  writeFileSync(join(dir, 'private-key.pem'), keys.privateKeyPem);
  const host = new URL(bench.remoteUrl).host;
  const config = testConfig(ns, {
    TETHER_RUNNER_NAMESPACE: runners,
    TETHER_REPO_HOSTS: host,
    GITHUB_API_URL: bench.github.url,
    TETHER_GITHUB_APP_ID: String(APP_ID),
    TETHER_GITHUB_APP_INSTALLATION_ID: String(INSTALLATION),
    TETHER_GITHUB_APP_PRIVATE_KEY_FILE: join(dir, 'private-key.pem'),
    TETHER_LOG_LEVEL: 'debug',
  });
  controller = createController({
    kubeConfig: connectionFromKubeConfig(kc),
    config,
    logger: pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) }),
  });
  await controller.start();
}, 120_000);
afterAll(async () => {
  await controller?.stop();
  await bench?.close();
  rmSync(dir, { recursive: true, force: true });
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners)]);
});

const tokenIn = (secret: V1Secret) => Buffer.from(secret.data!.token!, 'base64').toString();
const readSecret = (name: string, namespace = runners) =>
  core.readNamespacedSecret({ name, namespace }).catch(() => undefined);
const restStatus = async (path: string, token: string) =>
  (await fetch(`${bench.github.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).status;

describe('a runner Pod with a GitHub App', () => {
  let session: string;
  let first: string;

  it('gets a token for its one repository: the stand-in takes it there and refuses it on another', async () => {
    bench.github.setTokenLifetime(RENEW_BEFORE_MS + 6_000);
    session = await createSession(sessions, ns, '+14155550161', { repo: { url: bench.remoteUrl, baseBranch: 'main' } });
    const pod = runnerName(session);
    const secret = await eventually(async () => {
      const found = await readSecret(`${pod}-github`);
      expect(found).toBeDefined();
      return found!;
    }, 20_000);
    bench.github.setTokenLifetime(3_600_000);
    first = tokenIn(secret);
    const made = await core.readNamespacedPod({ name: pod, namespace: runners });
    expect(secret.metadata!.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: pod, uid: made.metadata!.uid },
    ]);
    expect(bench.github.tokens.find((t) => t.token === first)).toMatchObject({
      repositories: ['sample'],
      permissions: { contents: 'write', pull_requests: 'write', checks: 'read' },
    });
    await bench.push(`tether/${session}`, { 'app.txt': 'from the runner token\n' }, { token: first });
    await expect(bench.push('tether/elsewhere', { 'x.txt': 'x\n' }, { token: first, repo: 'other' })).rejects.toThrow(
      /403/,
    );
    expect(await restStatus('/repos/acme/sample/pulls', first)).toBe(200);
    expect(await restStatus('/repos/acme/other/pulls', first)).toBe(404);
    expect(await restStatus(`/repos/acme/sample/commits/${await bench.sha('main')}/status`, first)).toBe(403);
  });

  it('is renewed before it expires: a new token in the same Secret, the old one expiring on the stand-in', async () => {
    const pod = runnerName(session);
    const renewed = await eventually(async () => {
      const secret = await readSecret(`${pod}-github`);
      expect(tokenIn(secret!)).not.toBe(first);
      return secret!;
    }, 30_000);
    const second = tokenIn(renewed);
    const annotated = await core.readNamespacedPod({ name: pod, namespace: runners });
    const expiry = Date.parse(annotated.metadata!.annotations![ANNOTATION_TOKEN_EXPIRES]!);
    expect(expiry - bench.github.clock.now()).toBeGreaterThan(50 * 60_000);
    bench.github.clock.advance(RENEW_BEFORE_MS + 10_000);
    expect(await restStatus('/repos/acme/sample/pulls', first)).toBe(401);
    expect(await restStatus('/repos/acme/sample/pulls', second)).toBe(200);
    await expect(bench.push(`tether/${session}`, { 'b.txt': 'b\n' }, { token: first })).rejects.toThrow(/403/);
    await bench.push(`tether/${session}`, { 'b.txt': 'b\n' }, { token: second });
  });

  it('mounts into the runner container only; the key is in no Pod, Session, Event or log line', async () => {
    const pod = await core.readNamespacedPod({ name: runnerName(session), namespace: runners });
    const agent = pod.spec!.initContainers!.find((c) => c.name === 'agent')!;
    const runner = pod.spec!.containers.find((c) => c.name === 'runner')!;
    expect(agent.volumeMounts!.map((m) => m.name)).not.toContain('github-token');
    expect(runner.volumeMounts!.map((m) => m.name)).toContain('github-token');
    expect(runner.env!.map((e) => e.name)).not.toContain('GITHUB_TOKEN');
    const events = await kc
      .makeApiClient(CoreV1Api)
      .listNamespacedEvent({ namespace: ns })
      .then((list) => JSON.stringify(list.items));
    const texts = {
      pod: JSON.stringify(pod),
      session: JSON.stringify(await sessions.get(ns, session)),
      events,
      log: logLines.join(''),
    };
    expect(logLines.join('')).toContain("wrote the runner's GitHub App token");
    for (const [where, text] of Object.entries(texts)) {
      expect(text, where).not.toContain(KEY_BODY);
      expect(text, where).not.toContain('PRIVATE KEY');
      expect(text, where).not.toContain(first);
    }
    expect(texts.pod).not.toContain(dir);
  });
});

describe("the relay's token", () => {
  it('is a Secret for every repository of the installation, renewed before it expires', async () => {
    // The stand-in's clock was moved on above: the controller's clock agrees with GitHub's.
    const now = () => new Date(bench.github.clock.now());
    const settings = { appId: String(APP_ID), installationId: String(INSTALLATION), apiUrl: bench.github.url };
    const app = githubApp({ ...settings, privateKeyFile: join(dir, 'private-key.pem') }, now);
    bench.github.setTokenLifetime(RENEW_BEFORE_MS + 3_000);
    const kept = keepRelayToken({
      kube: connectionFromKubeConfig(kc),
      app,
      namespace: ns,
      name: 'tether-relay-github',
      logger: pino({ level: 'silent' }),
      now,
    });
    try {
      const first = await eventually(async () => tokenIn((await readSecret('tether-relay-github', ns))!), 20_000);
      bench.github.setTokenLifetime(3_600_000);
      const minted = bench.github.tokens.find((t) => t.token === first)!;
      expect(minted.repositories).toBeUndefined();
      expect(minted.permissions).toEqual({
        contents: 'write',
        pull_requests: 'write',
        checks: 'read',
        statuses: 'read',
      });
      expect(await restStatus('/repos/acme/other/pulls', first)).toBe(200);
      const main = await bench.sha('main');
      expect(await restStatus(`/repos/acme/sample/commits/${main}/status`, first)).toBe(200);
      await eventually(
        async () => expect(tokenIn((await readSecret('tether-relay-github', ns))!)).not.toBe(first),
        20_000,
      );
    } finally {
      kept.stop();
    }
  });
});
