// The budgets every record write keeps (relay/pulls/budget.ts, records.ts): a record's size, a
// phone's open records, the records' size in all. GitHub's text and one phone's many pull requests
// are hostile: none of it may crowd out another phone's records.
import { describe, expect, it } from 'vitest';
import { eventsOf } from '../../relay/github/events.ts';
import { applyEvent } from '../../relay/github/notices.ts';
import {
  boundedRecord,
  NOTICE_DETAILS_CHARS,
  PULL_OPEN_PER_PHONE,
  PULL_RECORD_MAX_BYTES,
} from '../../relay/pulls/budget.ts';
import { eventKeyDigest } from '../../relay/pulls/keys.ts';
import { MemoryPullRecords, PULL_RECORDS_MAX_BYTES } from '../../relay/pulls/records.ts';
import type { PullRecord } from '../../relay/pulls/types.ts';
import { grownRecord, payloads, PHONE, pullRecord } from './github-fixtures.ts';

const OTHER = '+15555550199';
const minute = (n: number) => new Date(Date.UTC(2026, 10, 1) + n * 60_000).toISOString();
const bytesOf = (record: PullRecord) => Buffer.byteLength(JSON.stringify(record));
const failed = (id: number) => eventsOf('check_run', payloads.checkFailed({ id }))[0]!;

async function write(records: MemoryPullRecords, record: PullRecord) {
  return records.update(record.owner, record.repo, record.number, () => record);
}

describe('a record', () => {
  it('grown by hostile check output shrinks to its bound, keeping its newest notice and key', () => {
    const grown = grownRecord(7, PHONE);
    expect(bytesOf(grown)).toBeGreaterThan(PULL_RECORD_MAX_BYTES * 4);
    const bounded = boundedRecord(grown);
    expect(bytesOf(bounded)).toBeLessThanOrEqual(PULL_RECORD_MAX_BYTES);
    expect(bounded.notices.at(-1)!.id).toBe(grown.notices.at(-1)!.id);
    expect(bounded.notices.every((n) => n.details!.length <= NOTICE_DETAILS_CHARS)).toBe(true);
    expect(bounded.seen.every((key) => /^[0-9a-f]{16}$/.test(key))).toBe(true);
    expect(bounded.seen.at(-1)).toBe(eventKeyDigest(grown.seen.at(-1)!));
    expect(boundedRecord(bounded)).toEqual(bounded);
  });

  it('still acts once on an event after its key is digested, and on one kept plain before digests', async () => {
    const records = new MemoryPullRecords();
    const event = failed(101);
    await write(records, pullRecord({ seen: ['check_run:55:' + 'a'.repeat(40)] }));
    const stored = await records.update('acme', 'web', 7, (r) => r && applyEvent(r, event, 'now', (s) => s).record);
    expect(stored!.seen).toEqual(['check_run:55:' + 'a'.repeat(40), eventKeyDigest(event.key)].map(eventKeyDigest));
    const again = applyEvent(stored!, event, 'later', (s) => s);
    expect([again.outcome, again.notice?.id]).toEqual(['seen', stored!.notices[0]!.id]);
    const legacy = pullRecord({ seen: [failed(102).key] });
    expect(applyEvent(legacy, failed(102), 'now', (s) => s).outcome).toBe('seen');
  });
});

describe("a phone's open records", () => {
  it(`beyond ${PULL_OPEN_PER_PHONE}, drop the phone's least recently chosen, not another phone's`, async () => {
    const records = new MemoryPullRecords();
    await write(records, pullRecord({ number: 500, phone: OTHER, chosenAt: minute(0) }));
    for (let n = 1; n <= PULL_OPEN_PER_PHONE + 1; n++)
      await write(records, pullRecord({ number: n, chosenAt: minute(n) }));
    const mine = (await records.ofPhone(PHONE)).map((r) => r.number);
    expect(mine).toEqual(Array.from({ length: PULL_OPEN_PER_PHONE }, (_, i) => PULL_OPEN_PER_PHONE + 1 - i));
    expect((await records.ofPhone(OTHER)).map((r) => r.number)).toEqual([500]);
    // The dropped one made again (a restart's list of old Sessions) is the least recently chosen: not kept.
    expect(await write(records, pullRecord({ number: 1, chosenAt: minute(1) }))).toBeUndefined();
    expect(await records.get('acme', 'web', 1)).toBeUndefined();
  });
});

describe('the records in all', () => {
  it('past their budget, drop merged and closed records, then the least recently chosen open ones', async () => {
    const records = new MemoryPullRecords();
    const grown = boundedRecord(grownRecord(1, PHONE));
    await write(records, { ...grown, number: 999, state: 'merged', chosenAt: minute(500) });
    const count = Math.ceil(PULL_RECORDS_MAX_BYTES / bytesOf(grown)) + 10;
    for (let n = 1; n <= count; n++) {
      const phone = `+1555555${String(Math.floor(n / PULL_OPEN_PER_PHONE)).padStart(4, '0')}`;
      expect(await write(records, { ...grown, number: n, phone, chosenAt: minute(n) })).toBeDefined();
    }
    const kept = await records.open();
    const numbers = kept.map((r) => r.number).sort((a, b) => a - b);
    expect(await records.get('acme', 'web', 999)).toBeUndefined();
    expect(numbers.at(-1)).toBe(count);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => count - numbers.length + 1 + i));
    expect(numbers.length).toBeLessThan(count - 5);
    expect(kept.reduce((sum, r) => sum + bytesOf(r), 0)).toBeLessThanOrEqual(PULL_RECORDS_MAX_BYTES);
  });
});
