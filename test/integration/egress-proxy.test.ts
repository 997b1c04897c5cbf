// The egress proxy as its own process (`node egress/main.ts`) on the real API server: real Sessions
// (their status written as the controller and runner would), the supervisor's events stream and
// answers spoken by this test, loopback listeners as destinations (the blocked ranges without 127/8).
// Direct allow; ask → once works once; session; repository persisted in the ConfigMap and used by a
// new Session of the same repository (not another's); deny with a readable 403; a timed-out wait whose
// later answer still applies; a closed stream; a Session's end cutting its credential and its tunnel;
// the supervisor's own list; a push to the forge refused; a credential of a deleted runner Pod, or of
// an earlier Pod of the same name, refused; and no credential in the proxy's log. The runner Pods are
// real Pods of the runner namespace that never schedule (a scheduling gate).
import { mkdtempSync, readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentPassword, supervisorPassword } from '../../common/egress/credentials.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { hostEnv } from '../../local/config.ts';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { startManaged, untilHttpOk, type Managed } from '../../local/control-plane/processes.ts';
import { DEFAULT_BLOCKED_CIDRS } from '../../egress/cidrs.ts';
import { grantKey } from '../../egress/grants.ts';
import { createNamespace, deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { lintMetrics, promlintBin } from '../support/promlint.ts';
import { createSession } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import {
  answer,
  basic,
  connectThrough,
  destination,
  openEvents,
  overTunnel,
  proxyGet,
  type EventsClient,
} from '../unit/egress-client.ts';

const KEY = 'egress-integration-key-'.padEnd(48, 'z');
const GRANTS = 'egress-grants-test';
const ASK_WAIT_MS = 8000;
const WEB = 'https://github.com/acme/web.git';
const API = 'https://github.com/acme/api.git';

let kc: KubeConfig;
let ns: string;
let runners: string;
let sessions: SessionClient;
let proxy: Managed;
let port: number;
let logFile: string;
/** Loopback listeners: each port is a destination of its own. */
const dests: Record<string, { server: Server; port: number; heads: string[] }> = {};
const opened: EventsClient[] = [];

/** The uid of each runner Pod this test made, by name (the latest of that name). */
const uids = new Map<string, string>();
const pw = (pod: string, uid = uids.get(pod)!) => supervisorPassword(KEY, runners, pod, uid);
const agent = (session: string, pod: string, uid?: string) =>
  basic(`agent.${session}`, agentPassword(pw(pod, uid), session));
const supervisor = (pod: string, uid?: string) => basic(`runner.${pod}`, pw(pod, uid));
const at = (name: string) => `127.0.0.1:${dests[name]!.port}`;

/** A runner Pod in the runner namespace, held back from scheduling: its uid is recorded. */
async function runnerPod(name: string): Promise<string> {
  const made = await kc.makeApiClient(CoreV1Api).createNamespacedPod({
    namespace: runners,
    body: {
      metadata: { name },
      spec: {
        serviceAccountName: 'runner',
        schedulingGates: [{ name: 'tether.dev/never' }],
        containers: [{ name: 'runner', image: 'runner' }],
      },
    },
  });
  uids.set(name, made.metadata!.uid!);
  return made.metadata!.uid!;
}

/** A Session bound to a runner Pod, as the controller leaves it once the runner works. */
async function liveSession(phone: string, pod: string, repo = WEB): Promise<string> {
  if (!uids.has(pod)) await runnerPod(pod);
  const name = await createSession(sessions, ns, phone, { repo: { url: repo } });
  await sessions.patchStatus(ns, name, { phase: 'Working', podName: pod });
  await eventually(async () =>
    expect((await connectThrough(port, at('allowed'), agent(name, pod))).reply.status).toBe(200),
  );
  return name;
}

async function stream(session: string, pod: string): Promise<EventsClient> {
  const events = await openEvents(port, session, supervisor(pod));
  expect(events.status).toBe(200);
  opened.push(events);
  return events;
}

/** The next ask on the stream after the events seen so far, answered with `grant`. */
async function answerNext(events: EventsClient, session: string, pod: string, grant: Parameters<typeof answer>[4]) {
  const ask = await events.next('ask', events.events.length);
  expect(await answer(port, session, supervisor(pod), ask.id, grant)).toBe(204);
  return ask;
}

beforeAll(async () => {
  promlintBin();
  ({ kc, ns, sessions } = await sessionNamespace('egress'));
  runners = await createNamespace(kc, 'egress-run');
  // The runner Pods' account, made here: a new namespace's default one may not exist yet.
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace: runners, body: { metadata: { name: 'runner' } } });
  for (const name of ['allowed', 'once', 'session', 'repo', 'deny', 'wait', 'closed', 'supervisor', 'forge', 'ended'])
    dests[name] = await destination();
  port = await freePort();
  logFile = join(mkdtempSync(join(tmpdir(), 'egress-')), 'egress.log');
  const blocked = DEFAULT_BLOCKED_CIDRS.filter((c) => c !== '127.0.0.0/8').join(',');
  proxy = startManaged('egress', process.execPath, ['egress/main.ts'], logFile, {
    cwd: join(import.meta.dirname, '../..'),
    env: {
      ...hostEnv(),
      KUBECONFIG: inject('kubeconfig'),
      TETHER_NAMESPACE: ns,
      TETHER_RUNNER_NAMESPACE: runners,
      TETHER_EGRESS_KEY: KEY,
      TETHER_EGRESS_PORT: String(port),
      TETHER_EGRESS_LISTEN: '127.0.0.1',
      TETHER_EGRESS_ALLOW: at('allowed'),
      TETHER_EGRESS_SUPERVISOR_ALLOW: at('supervisor'),
      TETHER_REPO_HOSTS: `github.com,${at('forge')}`,
      TETHER_EGRESS_BLOCKED_CIDRS: blocked,
      TETHER_EGRESS_ASK_WAIT: `${ASK_WAIT_MS}ms`,
      TETHER_EGRESS_GRANTS: GRANTS,
      TETHER_LOG_LEVEL: 'debug',
    },
  });
  await untilHttpOk(`http://127.0.0.1:${port}/healthz`, proxy, 60_000, 50);
}, 90_000);
afterAll(async () => {
  for (const events of opened) events.close();
  await proxy?.stop();
  for (const d of Object.values(dests)) d.server.close();
  if (kc) await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners)]);
});

describe('the egress proxy on a real API server', () => {
  it('creates its grants ConfigMap, lets a listed destination through, and reports the connection', async () => {
    const cm = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name: GRANTS, namespace: ns });
    expect(cm.metadata?.name).toBe(GRANTS);
    const s = await liveSession('+14155550301', 'pod-1');
    const events = await stream(s, 'pod-1');
    const { reply, socket } = await connectThrough(port, at('allowed'), agent(s, 'pod-1'));
    expect(reply.status).toBe(200);
    expect((await overTunnel(socket, '/direct')).body).toBe('reached /direct');
    const record = await eventually(() => {
      const hit = events.events.find((e) => e.type === 'connection' && e.port === dests.allowed!.port && e.bytes > 0);
      expect(hit).toBeDefined();
      return hit;
    });
    expect(record).toMatchObject({ caller: 'agent', host: '127.0.0.1', allowed: true });
  });

  it('asks the phone: once works once, and a deny is a readable 403', async () => {
    const s = await liveSession('+14155550302', 'pod-2');
    const events = await stream(s, 'pod-2');
    const first = connectThrough(port, at('once'), agent(s, 'pod-2'));
    const ask = await answerNext(events, s, 'pod-2', 'once');
    expect(ask).toMatchObject({ host: '127.0.0.1', port: dests.once!.port, method: 'CONNECT' });
    expect((await overTunnel((await first).socket, '/once')).body).toBe('reached /once');
    const second = connectThrough(port, at('once'), agent(s, 'pod-2'));
    await answerNext(events, s, 'pod-2', 'deny');
    const refused = (await second).reply;
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('denied from the phone');
    expect(refused.headers['proxy-status']).toContain('denied from the phone');
    expect(await answer(port, s, supervisor('pod-2'), ask.id, 'once')).toBe(404);
  });

  it('keeps a session grant for the Session, a repository grant for every Session of the repository', async () => {
    const s = await liveSession('+14155550303', 'pod-3');
    const events = await stream(s, 'pod-3');
    const first = connectThrough(port, at('session'), agent(s, 'pod-3'));
    await answerNext(events, s, 'pod-3', 'session');
    expect((await first).reply.status).toBe(200);
    const asksBefore = events.events.filter((e) => e.type === 'ask').length;
    expect((await connectThrough(port, at('session'), agent(s, 'pod-3'))).reply.status).toBe(200);
    const repo = connectThrough(port, at('repo'), agent(s, 'pod-3'));
    await answerNext(events, s, 'pod-3', 'repository');
    expect((await repo).reply.status).toBe(200);
    expect(events.events.filter((e) => e.type === 'ask').length).toBe(asksBefore + 1);
    const core = kc.makeApiClient(CoreV1Api);
    await eventually(async () => {
      const cm = await core.readNamespacedConfigMap({ name: GRANTS, namespace: ns });
      expect(cm.data?.[grantKey(WEB)]).toBe(at('repo'));
    });

    const sameRepo = await liveSession('+14155550304', 'pod-4');
    expect((await connectThrough(port, at('repo'), agent(sameRepo, 'pod-4'))).reply.status).toBe(200);
    expect((await connectThrough(port, at('session'), agent(sameRepo, 'pod-4'))).reply.status).not.toBe(200);

    const other = await liveSession('+14155550305', 'pod-5', API);
    const otherEvents = await stream(other, 'pod-5');
    const asked = connectThrough(port, at('repo'), agent(other, 'pod-5'));
    await answerNext(otherEvents, other, 'pod-5', 'deny');
    expect((await asked).reply.status).toBe(403);
  });

  it('refuses a wait that timed out in words the agent can act on; the later answer still applies', async () => {
    const s = await liveSession('+14155550306', 'pod-6');
    const events = await stream(s, 'pod-6');
    const waited = await connectThrough(port, at('wait'), agent(s, 'pod-6'));
    expect(waited.reply.status).toBe(403);
    expect(waited.reply.body).toContain(
      `waiting for the phone to answer about ${at('wait')}; try again after they answer`,
    );
    const ask = await events.next('ask');
    expect(await answer(port, s, supervisor('pod-6'), ask.id, 'session')).toBe(204);
    expect((await connectThrough(port, at('wait'), agent(s, 'pod-6'))).reply.status).toBe(200);
  }, 30_000);

  it('refuses the waiting connections of a Session whose stream closed, and asks nobody without one', async () => {
    const s = await liveSession('+14155550307', 'pod-7');
    const events = await stream(s, 'pod-7');
    const waiting = connectThrough(port, at('closed'), agent(s, 'pod-7'));
    await events.next('ask');
    events.close();
    const refused = (await waiting).reply;
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("the runner's connection to the proxy closed");
    const unasked = await connectThrough(port, at('closed'), agent(s, 'pod-7'));
    expect(unasked.reply.body).toContain('the phone could not be asked');
  });

  it("ends a finished Session's credential and cuts its open tunnel", async () => {
    const s = await liveSession('+14155550308', 'pod-8');
    const { reply, socket } = await connectThrough(port, at('allowed'), agent(s, 'pod-8'));
    expect(reply.status).toBe(200);
    const closed = new Promise((r) => socket.once('close', r));
    await sessions.patchStatus(ns, s, { phase: 'Succeeded' });
    await closed;
    expect((await connectThrough(port, at('allowed'), agent(s, 'pod-8'))).reply.status).toBe(407);
    expect((await openEvents(port, s, supervisor('pod-8'))).status).toBe(403);
  });

  it("lets the supervisor reach its own list only, reported on its Session's stream", async () => {
    const s = await liveSession('+14155550309', 'pod-9');
    const events = await stream(s, 'pod-9');
    const own = await connectThrough(port, at('supervisor'), supervisor('pod-9'));
    expect(own.reply.status).toBe(200);
    own.socket.destroy();
    const other = await connectThrough(port, at('allowed'), supervisor('pod-9'));
    expect(other.reply.status).toBe(403);
    expect(other.reply.body).toContain("not on the supervisor's list");
    await eventually(() =>
      expect(events.events).toContainEqual(
        expect.objectContaining({
          type: 'connection',
          caller: 'supervisor',
          port: dests.allowed!.port,
          allowed: false,
        }),
      ),
    );
  });

  it('reads the forge over plain HTTP and refuses every push shape', async () => {
    const s = await liveSession('+14155550310', 'pod-10');
    const forge = `http://${at('forge')}/acme/web.git`;
    const read = await proxyGet(port, `${forge}/info/refs?service=git-upload-pack`, agent(s, 'pod-10'));
    expect(read.status).toBe(200);
    for (const [method, path] of [
      ['GET', '/info/refs?service=git-receive-pack'],
      ['POST', '/git-receive-pack'],
      ['POST', '/GIT-RECEIVE-PACK'],
      ['POST', '/git-%72eceive-pack'],
      ['POST', '//git-receive-pack'],
    ] as const) {
      const refused = await proxyGet(port, `${forge}${path}`, agent(s, 'pod-10'), method);
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('no route to push');
    }
    expect(dests.forge!.heads.some((h) => /receive/i.test(h))).toBe(false);
    expect((await connectThrough(port, at('forge'), agent(s, 'pod-10'))).reply.status).toBe(403);
  });

  it('refuses the supervisor and the agent of a deleted runner Pod, and of a Pod made again with that name \
with the old password', async () => {
    const tunnel = async (target: string, auth: string) => {
      const { reply, socket } = await connectThrough(port, at(target), auth);
      socket.destroy();
      return reply.status;
    };
    const s = await liveSession('+14155550311', 'pod-11');
    const first = uids.get('pod-11')!;
    expect(await tunnel('supervisor', supervisor('pod-11', first))).toBe(200);
    await kc
      .makeApiClient(CoreV1Api)
      .deleteNamespacedPod({ namespace: runners, name: 'pod-11', gracePeriodSeconds: 0 });
    await eventually(async () => expect(await tunnel('supervisor', supervisor('pod-11', first))).toBe(407));
    expect(await tunnel('allowed', agent(s, 'pod-11', first))).toBe(407);
    const second = await runnerPod('pod-11');
    await eventually(async () => expect(await tunnel('allowed', agent(s, 'pod-11', second))).toBe(200));
    expect(await tunnel('supervisor', supervisor('pod-11', first))).toBe(407);
    expect(await tunnel('allowed', agent(s, 'pod-11', first))).toBe(407);
    expect(await tunnel('supervisor', supervisor('pod-11', second))).toBe(200);
  });

  it('counts what it did in metrics promlint accepts, and keeps every credential out of its log', async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(lintMetrics({ egress: metrics })).toEqual([]);
    expect(metrics).toMatch(/tether_egress_connections_total\{caller="agent",decision="allowed"\} [1-9]/);
    expect(metrics).toMatch(/tether_egress_connections_total\{caller="agent",decision="refused"\} [1-9]/);
    expect(metrics).toMatch(/tether_egress_asks_total\{answer="repository"\} 1/);
    expect(metrics).toMatch(/tether_egress_bytes_total\{caller="agent"\} [1-9]/);
    const log = readFileSync(logFile, 'utf8');
    expect(log).toContain('"connection"');
    for (const secret of [KEY, pw('pod-1'), pw('pod-9')]) expect(log).not.toContain(secret);
  });
});
