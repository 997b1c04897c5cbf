// The GitHub webhook on two relay replicas sharing the pull-request records in one ConfigMap on a
// real API server: the same deliveries reaching both (GitHub's retries, a redelivery under a new
// id, a load balancer sending copies to either) tell the phone of each event once.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { ConfigMapPullRecords } from '../../relay/pulls/records.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { payloads, pullRecord, signed, type SignedDelivery } from '../unit/github-fixtures.ts';
import { startGithubRelay, type GithubRelay } from '../unit/github-relay.ts';

const PULLS = 5;
const EVENTS = 40;
let kc: KubeConfig;
let ns: string;
let replicas: Array<GithubRelay<ConfigMapPullRecords>>;

beforeAll(async () => {
  ({ kc, ns } = await sessionNamespace('gh-webhook'));
  const records = () =>
    new ConfigMapPullRecords(connectionFromKubeConfig(kc), { name: 'pull-requests', namespace: ns });
  const seed = records();
  for (let number = 1; number <= PULLS; number++)
    await seed.update('acme', 'web', number, () =>
      pullRecord({ number, url: `https://github.com/acme/web/pull/${number}` }),
    );
  replicas = await Promise.all([0, 1].map(() => startGithubRelay({ records: records(), retryForMs: 60_000 })));
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await deleteNamespace(kc, ns);
});

const post = (relay: GithubRelay<ConfigMapPullRecords>, d: SignedDelivery) =>
  fetch(`${relay.base}/github/webhook`, { method: 'POST', headers: d.headers, body: d.body }).then((r) => r.status);

describe('the GitHub webhook on two replicas sharing the records', () => {
  it('every delivery to both replicas, and a redelivery of each under a new id: each event told once', async () => {
    const deliveries = Array.from({ length: EVENTS }, (_, i) =>
      // each on its own head: failures on one head are joined into one notice
      signed('check_run', payloads.checkFailed({ id: 100 + i, number: 1 + (i % PULLS), sha: headOf(i) })),
    );
    const sends = deliveries.flatMap((d) => [
      post(replicas[0]!, d),
      post(replicas[1]!, d),
      post(replicas[i(d) % 2]!, signed('check_run', JSON.parse(d.body))),
    ]);
    expect(new Set(await Promise.all(sends))).toEqual(new Set([202]));
    await Promise.all(replicas.map((r) => r.deliveries.idle()));

    const told = replicas.flatMap((r) => r.sent.map((s) => s.parts[0]!.actions![0]!.payload));
    expect(told).toHaveLength(EVENTS);
    expect(new Set(told).size).toBe(EVENTS);
    const stored = await replicas[0]!.records.open();
    expect(stored.map((r) => r.seen.length)).toEqual(Array(PULLS).fill(EVENTS / PULLS));
    expect(stored.flatMap((r) => r.notices).every((n) => n.sent)).toBe(true);
    expect(replicas.map((r) => r.journal.depth)).toEqual([0, 0]);
  });
});

const headOf = (i: number) => i.toString(16).padStart(40, '0');

/** Which replica gets a delivery's redelivery: by its run id. */
const i = (d: SignedDelivery) => (JSON.parse(d.body) as { check_run: { id: number } }).check_run.id;
