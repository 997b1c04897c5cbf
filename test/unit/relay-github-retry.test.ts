// Two replicas act on one event: a retry in one must not send the notice the other recorded and is
// still sending (it would reach the phone twice); a restart's replay sends a notice left unsent.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { makeRedactor } from '../../common/log.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { PullNotifier } from '../../relay/github/notify.ts';
import { createMetrics } from '../../relay/metrics.ts';
import type { Part } from '../../relay/outbound/owed.ts';
import { PhoneLanes } from '../../relay/phone-lane.ts';
import { MemoryRecords, PHONE, SECRET, payloads, pullRecord } from './github-fixtures.ts';

function replica(records: MemoryRecords, deliver: (parts: Part[]) => Promise<void>) {
  return new PullNotifier({
    records,
    outbox: { deliver: (_phone, parts) => deliver(parts) },
    lanes: new PhoneLanes(),
    isRecipient: (phone) => phone === PHONE,
    redact: makeRedactor([SECRET]),
    metrics: createMetrics(),
    logger: pino({ level: 'silent' }),
  });
}

const failure = () => eventsOf('check_run', payloads.checkFailed())[0]!;

describe('a notice is sent by the replica that recorded it', () => {
  it("a retry on the other replica does not send a notice still being sent; a restart's replay does", async () => {
    const records = new MemoryRecords([pullRecord()]);
    const sent: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const a = replica(records, async () => (await held, void sent.push('a')));
    const b = replica(records, async () => void sent.push('b'));
    const first = a.notify(failure());
    await expect.poll(async () => (await records.only()).notices.length).toBe(1);
    expect(await b.notify(failure(), 'retry')).toBe('seen');
    expect(sent).toEqual([]);
    release();
    expect(await first).toBe('told');
    expect(sent).toEqual(['a']);
    expect((await records.only()).notices[0]!.sent).toBe(true);
  });

  it('a retry after the send itself failed sends it; a restart sends one recorded and never sent', async () => {
    const records = new MemoryRecords([pullRecord()]);
    const sent: string[] = [];
    let fail = true;
    const a = replica(records, async () => {
      if (fail) throw new Error('Twilio is not answering');
      sent.push('a');
    });
    await expect(a.notify(failure())).rejects.toThrow('not answering');
    fail = false;
    expect(await a.notify(failure(), 'retry')).toBe('told');
    expect(sent).toEqual(['a']);

    const again = new MemoryRecords([pullRecord()]);
    const crashed = replica(again, () => Promise.reject(new Error('the process dies')));
    await expect(crashed.notify(failure())).rejects.toThrow('dies');
    const restarted = replica(again, async () => void sent.push('restarted'));
    expect(await restarted.notify(failure(), 'retry')).toBe('seen');
    expect(await restarted.notify(failure(), 'restart')).toBe('told');
    expect(sent).toEqual(['a', 'restarted']);
  });
});
