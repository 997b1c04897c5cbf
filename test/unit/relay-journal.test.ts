// The inbound journal on a real folder: what survives a restart, a torn last line, compaction,
// and the intake's backlog limit in front of it.
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { InboundMessage } from '../../relay/inbound/message.ts';
import { Intake } from '../../relay/inbound/intake.ts';
import { Journal } from '../../relay/inbound/journal.ts';
import { Once } from '../../relay/inbound/once.ts';
import { createMetrics } from '../../relay/metrics.ts';

const folder = () => mkdtempSync(join(tmpdir(), 'journal-'));
/** The journal's segment files, oldest first, and the lines of all of them. */
const segments = (dir: string) =>
  readdirSync(dir)
    .filter((name) => /^inbound-\d+\.jsonl$/.test(name))
    .sort();
const lines = (dir: string) =>
  segments(dir).flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean));
const message = (id: string, body = `command ${id}`): InboundMessage => ({
  id,
  from: '+14155550100',
  body,
  transport: 'twilio',
  receivedAt: new Date().toISOString(),
});

describe('inbound journal', () => {
  it(`gives back after a restart exactly the messages \
not done, with their routes, under the same identity`, async () => {
    const dir = folder();
    const first = await Journal.open(dir);
    await Promise.all(['a', 'b', 'c'].map((id) => first.record(message(id))));
    await first.routed('b', { kind: 'decide', session: 's1', decision: { requestId: 'r1', action: 'approve' } });
    await first.done('a');
    await first.close();
    const second = await Journal.open(dir);
    expect(second.instance).toBe(first.instance);
    expect(second.records().map((r) => [r.message.id, r.route?.kind])).toEqual([
      ['b', 'decide'],
      ['c', undefined],
    ]);
    expect(segments(dir)).toHaveLength(1);
    expect(lines(dir)).toHaveLength(3); // compacted: b, its route, c
    await second.close();
  });

  it('ignores a line torn by a crash in the middle of a write', async () => {
    const dir = folder();
    const journal = await Journal.open(dir);
    await journal.record(message('whole'));
    await journal.close();
    appendFileSync(join(dir, segments(dir).at(-1)!), '{"t":"in","m":{"id":"torn","fr');
    const reopened = await Journal.open(dir);
    expect(reopened.records().map((r) => r.message.id)).toEqual(['whole']);
    await reopened.record(message('next'));
    await reopened.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['whole', 'next']);
  });

  it(`commits many concurrent records together, each in the \
file when its promise resolves, and syncs them behind`, async () => {
    const dir = folder();
    const syncs: number[] = [];
    const journal = await Journal.open(dir, { onSync: (seconds) => syncs.push(seconds) });
    const ids = Array.from({ length: 500 }, (_, i) => `m${i}`);
    await Promise.all(ids.map((id) => journal.record(message(id))));
    expect(journal.depth).toBe(500);
    // Written, not yet necessarily synced: a process that dies now leaves them in the file.
    expect(lines(dir)).toHaveLength(500);
    await Promise.all(ids.slice(0, 499).map((id) => journal.done(id)));
    await journal.close();
    expect(syncs.length).toBeGreaterThan(0);
    expect(syncs.length).toBeLessThan(1000); // synced behind, at most once a second: far fewer syncs than appends
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['m499']);
  });

  it(`does not rewrite a backlog larger than the compaction threshold on every flush, and still compacts once most \
lines are done`, async () => {
    const dir = folder();
    const journal = await Journal.open(dir, { compactAfter: 10 });
    const started = new Set<string>();
    for (let i = 0; i < 40; i++) {
      await journal.record(message(`m${i}`));
      segments(dir).forEach((name) => started.add(name)); // a compaction starts a new segment
    }
    expect(started.size).toBe(1);
    for (let i = 0; i < 35; i++) await journal.done(`m${i}`);
    expect(
      readFileSync(join(dir, segments(dir).at(-1)!), 'utf8')
        .trim()
        .split('\n').length,
    ).toBeLessThan(20);
    await journal.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['m35', 'm36', 'm37', 'm38', 'm39']);
  });

  it('reports itself unhealthy once a write has failed, and refuses every later record', async () => {
    const dir = folder();
    const journal = await Journal.open(dir, { compactAfter: 2 });
    symlinkSync('/dev/full', join(dir, 'inbound-00000002.jsonl')); // the next segment is on a full disk
    await Promise.all(['a', 'b', 'c'].map((id) => journal.record(message(id))));
    expect(journal.healthy).toBe(true);
    await journal.done('a'); // 4 lines for 2 open messages: a compaction follows, and fails
    await vi.waitFor(() => expect(journal.healthy).toBe(false));
    await expect(journal.record(message('d'))).rejects.toMatchObject({ code: 'ENOSPC' });
  });
});

/**
 * A relay process that records `count` messages (every third done, the rest routed), compacting every
 * `compactAfter` lines, and is SIGKILLed as soon as the last record is written: no close, no sync.
 */
function crashAfterRecording(dir: string, count: number, compactAfter: number): void {
  const script = `
    import { Journal } from ${JSON.stringify(resolve('relay/inbound/journal.ts'))};
    const journal = await Journal.open(${JSON.stringify(dir)}, { compactAfter: ${compactAfter} });
    for (let i = 0; i < ${count}; i++) {
      const id = 'm' + i;
      await journal.record({
        id, from: '+14155550100', body: 'command ' + id, transport: 'twilio', receivedAt: new Date().toISOString(),
      });
      if (i % 3 === 0) await journal.done(id);
      else await journal.routed(id, { kind: 'status' });
    }
    process.kill(process.pid, 'SIGKILL');`;
  try {
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe' });
  } catch (error) {
    expect((error as { signal?: string }).signal).toBe('SIGKILL');
    return;
  }
  throw new Error('the journal process was not killed');
}
const openAfterCrash = (count: number) =>
  Array.from({ length: count }, (_, i) => `m${i}`).filter((_, i) => i % 3 !== 0);

describe('inbound journal segments', () => {
  it(`starts a new segment on compaction, keeps the old \
ones until the new one is synced, then removes them`, async () => {
    const dir = folder();
    const journal = await Journal.open(dir, { compactAfter: 4 });
    const first = segments(dir);
    for (const id of ['a', 'b', 'c']) await journal.record(message(id));
    await journal.done('a');
    expect(segments(dir)).toEqual([first[0], expect.any(String)]); // rotated; the first waits for the next sync
    expect(
      readFileSync(join(dir, segments(dir)[1]!), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).m.id),
    ).toEqual(['b', 'c']);
    await vi.waitFor(() => expect(segments(dir)).toHaveLength(1), { timeout: 3000 });
    await journal.record(message('d'));
    await journal.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['b', 'c', 'd']);
  });

  it('loses nothing written before the process is killed, across every segment it left, with the routes', async () => {
    const dir = folder();
    crashAfterRecording(dir, 60, 10);
    expect(segments(dir).length).toBeGreaterThan(1); // killed before the superseded ones were removed
    const journal = await Journal.open(dir);
    expect(journal.records().map((r) => r.message.id)).toEqual(openAfterCrash(60));
    expect(journal.records().every((r) => r.route?.kind === 'status')).toBe(true);
    expect(segments(dir)).toHaveLength(1);
    await journal.close();
  });

  it('skips a line torn at the end of any segment, and appends after it in a segment of its own', async () => {
    const dir = folder();
    crashAfterRecording(dir, 30, 10);
    for (const name of segments(dir)) appendFileSync(join(dir, name), '{"t":"done","id":"m1'); // would end m1 if whole
    const journal = await Journal.open(dir);
    expect(journal.records().map((r) => r.message.id)).toEqual(openAfterCrash(30));
    await journal.record(message('after'));
    await journal.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual([...openAfterCrash(30), 'after']);
  });

  it(`reads the single file of an earlier version first, \
and removes it once its messages are in a segment`, async () => {
    const dir = folder();
    appendFileSync(
      join(dir, 'inbound.jsonl'),
      `${JSON.stringify({ t: 'in', m: message('old') })}\n${JSON.stringify({ t: 'in', m: message('gone') })}\n` +
        '{"t":"done","id":"gone"}\n',
    );
    const journal = await Journal.open(dir);
    expect(journal.records().map((r) => r.message.id)).toEqual(['old']);
    expect(readdirSync(dir)).not.toContain('inbound.jsonl');
    await journal.close();
    expect((await Journal.open(dir)).records().map((r) => r.message.id)).toEqual(['old']);
  });
});

describe('intake', () => {
  const noClaims = { claim: async () => true };

  it('acknowledges a copy arriving after its message was acted on, neither recording nor acting again', async () => {
    const dir = folder();
    const journal = await Journal.open(dir);
    const metrics = createMetrics();
    const acted: string[] = [];
    const handler = {
      accept: async (m: InboundMessage) => (acted.push(m.id), 'start' as const),
      once: new Once(noClaims),
    };
    const intake = new Intake({ journal, handler, maxBacklog: 2, metrics, logger: pino({ level: 'silent' }) });
    expect(await intake.receive(message('one'))).toBe('recorded');
    await intake.idle();
    expect(await intake.receive(message('one'))).toBe('recorded');
    await intake.idle();
    expect(acted).toEqual(['one']);
    expect(lines(dir).filter((l) => l.includes('"t":"in"'))).toHaveLength(1);
    expect((await metrics.duplicates.get()).values[0]!.value).toBe(1);
  });

  it('refuses new messages while the backlog is full, acknowledges copies it holds, drains on idle()', async () => {
    const journal = await Journal.open(folder());
    const metrics = createMetrics();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const acted: string[] = [];
    const handler = {
      accept: async (m: InboundMessage) => (await gate, acted.push(m.id), 'start' as const),
      once: new Once(noClaims),
    };
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

  it(`says a message could not be acted on (not that the journal failed) when acting on it throws, and keeps it for a \
replay`, async () => {
    const journal = await Journal.open(folder());
    const lines: { msg: string }[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const handler = {
      accept: async () => {
        throw new Error('the phone could not be told either');
      },
      once: new Once(noClaims),
    };
    const intake = new Intake({ journal, handler, maxBacklog: 2, metrics: createMetrics(), logger });
    expect(await intake.receive(message('one'))).toBe('recorded');
    await intake.idle();
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^could not act on an inbound message/)]);
    expect(journal.records().map((r) => r.message.id)).toEqual(['one']);
  });
});
