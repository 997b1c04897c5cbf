// The inbound journal on a real folder: what survives a restart, a torn last line, compaction,
// and the intake's backlog limit in front of it.
import { appendFileSync, mkdtempSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { InboundMessage } from '../../relay/inbound/handler.ts';
import { Intake } from '../../relay/inbound/intake.ts';
import { Journal } from '../../relay/inbound/journal.ts';
import { createMetrics } from '../../relay/metrics.ts';

const folder = () => mkdtempSync(join(tmpdir(), 'journal-'));
const message = (id: string, body = `command ${id}`): InboundMessage => ({ id, from: '+14155550100', body, transport: 'twilio', receivedAt: new Date().toISOString() });

describe('inbound journal', () => {
  it('gives back after a restart exactly the messages not done, with their routes, under the same identity', async () => {
    const dir = folder();
    const first = await Journal.open(dir);
    await Promise.all(['a', 'b', 'c'].map((id) => first.record(message(id))));
    await first.routed('b', { kind: 'decide', session: 's1', decision: { requestId: 'r1', action: 'approve' } });
    await first.done('a');
    await first.close();
    const second = await Journal.open(dir);
    expect(second.instance).toBe(first.instance);
    expect(second.records().map((r) => [r.message.id, r.route?.kind])).toEqual([['b', 'decide'], ['c', undefined]]);
    expect(readFileSync(join(dir, 'inbound.jsonl'), 'utf8').trim().split('\n')).toHaveLength(3); // compacted: b, its route, c
    await second.close();
  });

  it('ignores a line torn by a crash in the middle of a write', async () => {
    const dir = folder();
    const journal = await Journal.open(dir);
    await journal.record(message('whole'));
    await journal.close();
    appendFileSync(join(dir, 'inbound.jsonl'), '{"t":"in","m":{"id":"torn","fr');
    const reopened = await Journal.open(dir);
    expect(reopened.records().map((r) => r.message.id)).toEqual(['whole']);
    await reopened.record(message('next'));
    await reopened.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['whole', 'next']);
  });

  it('commits many concurrent records together, each in the file when its promise resolves, and syncs them behind', async () => {
    const dir = folder();
    const syncs: number[] = [];
    const journal = await Journal.open(dir, { onSync: (seconds) => syncs.push(seconds) });
    const ids = Array.from({ length: 500 }, (_, i) => `m${i}`);
    await Promise.all(ids.map((id) => journal.record(message(id))));
    expect(journal.depth).toBe(500);
    // Written, not yet necessarily synced: a process that dies now leaves them in the file.
    expect(readFileSync(join(dir, 'inbound.jsonl'), 'utf8').trim().split('\n')).toHaveLength(500);
    await Promise.all(ids.slice(0, 499).map((id) => journal.done(id)));
    await journal.close();
    expect(syncs.length).toBeGreaterThan(0);
    expect(syncs.length).toBeLessThan(1000); // group commit: far fewer syncs than appends
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['m499']);
  });

  it('does not rewrite a backlog larger than the compaction threshold on every flush, and still compacts once most lines are done', async () => {
    const dir = folder();
    const journal = await Journal.open(dir, { compactAfter: 10 });
    const file = join(dir, 'inbound.jsonl');
    const rewrites = new Set<number>();
    for (let i = 0; i < 40; i++) {
      await journal.record(message(`m${i}`));
      rewrites.add(statSync(file).ino); // a compaction renames a new file into place
    }
    expect(rewrites.size).toBe(1);
    for (let i = 0; i < 35; i++) await journal.done(`m${i}`);
    expect(readFileSync(file, 'utf8').trim().split('\n').length).toBeLessThan(20);
    await journal.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['m35', 'm36', 'm37', 'm38', 'm39']);
  });

  it('reports itself unhealthy once a write has failed, and refuses every later record', async () => {
    const dir = folder();
    const journal = await Journal.open(dir, { compactAfter: 2 });
    symlinkSync('/dev/full', join(dir, 'inbound.jsonl.tmp')); // the next compaction writes to a full disk
    await Promise.all(['a', 'b', 'c'].map((id) => journal.record(message(id))));
    expect(journal.healthy).toBe(true);
    await journal.done('a'); // 4 lines for 2 open messages: a compaction follows, and fails
    await vi.waitFor(() => expect(journal.healthy).toBe(false));
    await expect(journal.record(message('d'))).rejects.toMatchObject({ code: 'ENOSPC' });
  });
});

describe('intake', () => {
  it('refuses new messages while the backlog is full, acknowledges copies of one it holds, and drains on idle()', async () => {
    const journal = await Journal.open(folder());
    const metrics = createMetrics();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const acted: string[] = [];
    const handler = { accept: async (m: InboundMessage) => (await gate, acted.push(m.id), 'start' as const) };
    const intake = new Intake({ journal, handler, maxBacklog: 2, metrics, logger: pino({ level: 'silent' }) });
    expect(await intake.receive(message('one'))).toBe('recorded');
    expect(await intake.receive(message('two'))).toBe('recorded');
    expect(await intake.receive(message('two'))).toBe('recorded');
    expect(await intake.receive(message('three'))).toBe('shed');
    release();
    await intake.idle();
    expect(acted).toEqual(['one', 'two']);
    expect(journal.depth).toBe(0);
    expect(await intake.receive(message('three'))).toBe('recorded');
    await intake.idle();
    expect(acted).toEqual(['one', 'two', 'three']);
  });

  it('says a message could not be acted on (not that the journal failed) when acting on it throws, and keeps it for a replay', async () => {
    const journal = await Journal.open(folder());
    const lines: { msg: string }[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const handler = { accept: async () => { throw new Error('the phone could not be told either'); } };
    const intake = new Intake({ journal, handler, maxBacklog: 2, metrics: createMetrics(), logger });
    expect(await intake.receive(message('one'))).toBe('recorded');
    await intake.idle();
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^could not act on an inbound message/)]);
    expect(journal.records().map((r) => r.message.id)).toEqual(['one']);
  });
});
