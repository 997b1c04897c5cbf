// One ConfigMap holds every phone's pull-request records, and a record grows with what GitHub tells
// of its pull request: up to PULL_SEEN_KEPT event keys and PULL_NOTICES_KEPT notices with their
// details. That text is hostile: the agent writes its own branch's CI output, a collaborator pushes
// and reviews. Grown to the most GitHub's text allows, a handful of one phone's open pull requests
// pass PULL_RECORDS_MAX_BYTES — open records are never dropped — and then every write fails: another
// phone's pull request is never recorded, none of its notices is kept or sent.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { applyEvent } from '../../relay/github/notices.ts';
import { ConfigMapPullRecords } from '../../relay/pulls/records.ts';
import type { PullRecord } from '../../relay/pulls/types.ts';
import { payloads, pullRecord } from '../unit/github-fixtures.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';

const MALLORY = '+15555550100';
const ALICE = '+15555550199';
/** Open pull requests of one phone whose CI the agent's changes write. */
const HOSTILE_PULLS = 14;
let kc: KubeConfig;
let ns: string;

beforeAll(async () => {
  kc = adminKubeConfig();
  ns = await createNamespace(kc, 'records-size');
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

/** A record after 250 failing check runs of long names and output, on 250 different heads. */
function grown(number: number): PullRecord {
  let record = pullRecord({ number, phone: MALLORY, url: `https://github.com/acme/web/pull/${number}` });
  const output = Array.from({ length: 12 }, () => '中'.repeat(200)).join('\n');
  for (let i = 0; i < 250; i++) {
    const payload = payloads.checkFailed({
      id: 1e15 + i,
      number,
      sha: i.toString(16).padStart(4, '0').repeat(16),
      name: '"'.repeat(100),
      summary: output,
    });
    for (const event of eventsOf('check_run', payload)) record = applyEvent(record, event, 'now', (s) => s).record;
  }
  return record;
}

describe('the records of hostile pull requests', () => {
  it("leave room for another phone's pull request", async () => {
    const records = new ConfigMapPullRecords(connectionFromKubeConfig(kc), { name: 'records', namespace: ns });
    for (let n = 1; n <= HOSTILE_PULLS; n++) {
      const record = grown(n);
      await records.update('acme', 'web', n, () => record);
    }
    const alice = pullRecord({ number: 900, phone: ALICE, url: 'https://github.com/acme/web/pull/900' });
    await records.update('acme', 'web', 900, () => alice);
    expect((await records.current(ALICE, 'web'))?.number).toBe(900);
  });
});
