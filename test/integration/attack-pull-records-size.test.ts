// One ConfigMap holds every phone's pull-request records, and a record grows with what GitHub tells
// of its pull request: event keys, and notices with their details. That text is hostile: the agent
// writes its own branch's CI output, a collaborator pushes and reviews. Grown to the most GitHub's
// text allows, a handful of one phone's open pull requests used to pass PULL_RECORDS_MAX_BYTES, and
// then every write failed: another phone's pull request was never recorded, none of its notices kept.
// Now each record, each phone's open records and the ConfigMap keep their budgets (relay/pulls/budget.ts).
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { applyEvent } from '../../relay/github/notices.ts';
import { ConfigMapPullRecords, PULL_RECORDS_MAX_BYTES } from '../../relay/pulls/records.ts';
import { grownRecord, payloads, pullRecord } from '../unit/github-fixtures.ts';
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

const recordsNamed = (name: string) => new ConfigMapPullRecords(connectionFromKubeConfig(kc), { name, namespace: ns });
const minute = (n: number) => new Date(Date.UTC(2026, 10, 1) + n * 60_000).toISOString();

/** Alice's pull request is recorded, and a failing check on it is kept as a notice. */
async function aliceHeard(records: ConfigMapPullRecords): Promise<void> {
  const alice = pullRecord({
    number: 900,
    phone: ALICE,
    url: 'https://github.com/acme/web/pull/900',
    chosenAt: minute(1e4),
  });
  await records.update('acme', 'web', 900, () => alice);
  expect((await records.current(ALICE, 'web'))?.number).toBe(900);
  const [event] = eventsOf('check_run', payloads.checkFailed({ number: 900 }));
  await records.update('acme', 'web', 900, (r) => r && applyEvent(r, event!, 'now', (s) => s).record);
  expect((await records.get('acme', 'web', 900))?.notices.map((n) => n.kind)).toEqual(['checksFailed']);
}

describe('the records of hostile pull requests', () => {
  it("leave room for another phone's pull request", async () => {
    const records = recordsNamed('records');
    for (let n = 1; n <= HOSTILE_PULLS; n++) {
      const record = grownRecord(n, MALLORY);
      await records.update('acme', 'web', n, () => record);
    }
    await aliceHeard(records);
  });

  it('past the ConfigMap budget, drop the least recently chosen open records, and every write goes on', async () => {
    const records = recordsNamed('records-full');
    const grown = grownRecord(1, MALLORY);
    const phones = Array.from({ length: 6 }, (_, i) => `+1555555020${i}`);
    let n = 0;
    for (const phone of phones)
      for (let i = 0; i < 20; i++, n++) {
        const url = `https://github.com/acme/web/pull/${n + 1}`;
        const record = { ...grown, number: n + 1, phone, url, chosenAt: minute(n) };
        await records.update('acme', 'web', n + 1, () => record);
      }
    await aliceHeard(records);
    const kept = await records.open();
    const numbers = kept.map((r) => r.number);
    expect(numbers).toContain(n);
    expect(numbers).not.toContain(1);
    const oldestKept = Math.min(...numbers.filter((x) => x !== 900));
    expect(numbers.filter((x) => x !== 900).sort((a, b) => a - b)).toEqual(
      Array.from({ length: n - oldestKept + 1 }, (_, i) => oldestKept + i),
    );
    const bytes = kept.reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r)), 0);
    expect(bytes).toBeLessThanOrEqual(PULL_RECORDS_MAX_BYTES);
  });
});
