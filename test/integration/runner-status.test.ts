// The runner's status writer against the real apiserver: batching, bounded progress, optimistic
// writes that re-read and retry on 409, and respect for a terminal phase written by someone else.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIELD_MANAGERS, SessionClient } from '../../common/kube/sessions.ts';
import { makeRedactor } from '../../common/log.ts';
import { SessionFinished, StatusWriter } from '../../runner-image/status.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { createStartedSession, specFor } from '../support/runner.ts';

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('runstat'));
});
afterAll(async () => deleteNamespace(kc, ns));

async function writerFor(batchMs = 400, log = pino({ level: 'silent' })) {
  const name = await createStartedSession(sessions, ns, specFor('script:\nsay: hi', '/tmp/none/acme/web.git'));
  const writer = new StatusWriter({
    sessions: new SessionClient(connectionFromKubeConfig(kc), FIELD_MANAGERS.runner),
    namespace: ns,
    name,
    redact: makeRedactor(['s3cr3t-value']),
    log,
    batchMs,
  });
  await writer.load();
  return { name, writer };
}

describe('runner status writer', () => {
  it('batches progress: 200 lines in a burst become a few writes, last 50 kept, seq increasing', async () => {
    const { name, writer } = await writerFor();
    for (let i = 1; i <= 200; i++) writer.addProgress(`step ${i}`);
    await writer.flush();
    expect(writer.writes).toBeLessThanOrEqual(2);
    const progress = (await sessions.get(ns, name))!.status!.progress!;
    expect(progress).toHaveLength(50);
    expect(progress.map((p) => p.seq)).toEqual(Array.from({ length: 50 }, (_, i) => 151 + i));
    expect(progress.at(-1)?.text).toBe('step 200');
  });

  it("writes the run's first progress line at once and batches the ones after it", async () => {
    const { name, writer } = await writerFor(60_000);
    const texts = async () => ((await sessions.get(ns, name))!.status?.progress ?? []).map((p) => p.text);
    writer.setResult({ costUsd: 0.01 }); // a write just before: the batch window is open
    await writer.flush();
    writer.addProgress('first milestone');
    await eventually(async () => expect(await texts()).toEqual(['first milestone']), 5000);
    writer.addProgress('second milestone');
    await new Promise((r) => setTimeout(r, 500));
    expect(await texts()).toEqual(['first milestone']);
    expect(writer.writes).toBe(2);
    await writer.flush();
    expect(await texts()).toEqual(['first milestone', 'second milestone']);
  });

  it('re-reads and retries on conflict, keeping what the controller wrote', async () => {
    const { name, writer } = await writerFor();
    await sessions.patchStatus(ns, name, { display: { phone: '+1415•••0123' }, podName: 'p-runner' });
    writer.addProgress('after a concurrent controller write');
    expect(await writer.move({ type: 'RunnerStarted' })).toBe(true);
    const session = (await sessions.get(ns, name))!;
    expect(session.status).toMatchObject({ phase: 'Working', podName: 'p-runner', display: { phone: '+1415•••0123' } });
    expect(session.status?.progress?.map((p) => p.text)).toEqual(['after a concurrent controller write']);
  });

  it('stays correct under a stream of concurrent controller writes', async () => {
    const { name, writer } = await writerFor(20);
    let stop = false;
    const controller = (async () => {
      for (let i = 0; !stop; i++) {
        await sessions.patchStatus(ns, name, { display: { duration: `${i}s` } });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const started = Date.now();
    for (let i = 1; i <= 40; i++) {
      writer.addProgress(`line ${i}`);
      await writer.flush();
    }
    const perSecond = (40 / ((Date.now() - started) / 1000)).toFixed(0);
    stop = true;
    await controller;
    console.log(`[runner-status] 40 sequential status writes with a concurrent writer: ${perSecond} writes/s`);
    const session = (await sessions.get(ns, name))!;
    expect(session.status?.progress?.map((p) => p.text)).toEqual(Array.from({ length: 40 }, (_, i) => `line ${i + 1}`));
    expect(session.status?.display?.duration).toMatch(/^\d+s$/);
  });

  it('redacts secrets before writing', async () => {
    const { name, writer } = await writerFor();
    writer.addProgress('using s3cr3t-value now');
    writer.setResult({ summary: 'token ghp_0123456789abcdefghijABCDEFGH end' });
    await writer.flush();
    const status = JSON.stringify((await sessions.get(ns, name))!.status);
    expect(status).not.toContain('s3cr3t-value');
    expect(status).not.toContain('ghp_0123');
    expect(status).toContain('using [redacted] now');
  });

  it('never moves back to an older copy the watch delivers late; picks up newer ones by reading again', async () => {
    const { name, writer } = await writerFor();
    const starting = (await sessions.get(ns, name))!;
    expect(await writer.move({ type: 'RunnerStarted' })).toBe(true);
    const seen: Array<string | undefined> = [];
    writer.onChange((s) => seen.push(s.status?.phase));
    writer.noticed(starting);
    await writer.load();
    expect(writer.phase).toBe('Working');
    expect(seen.every((phase) => phase === 'Working')).toBe(true);
    const cancelled = await sessions.patch(ns, name, { spec: { cancel: true } });
    writer.noticed(cancelled);
    await eventually(() => expect(writer.session?.spec.cancel).toBe(true));
    expect(writer.phase).toBe('Working');
  });

  it('never overwrites a terminal phase written by someone else', async () => {
    const { name, writer } = await writerFor();
    await sessions.patchStatus(ns, name, { phase: 'Cancelled' });
    writer.addProgress('too late');
    await expect(writer.move({ type: 'RunnerStarted' })).rejects.toBeInstanceOf(SessionFinished);
    const session = (await sessions.get(ns, name))!;
    expect(session.status?.phase).toBe('Cancelled');
    expect(session.status?.progress).toBeUndefined();
  });

  it(`a cancel written by the controller meets the batched \
writes after it without an error: said once, at info`, async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const { name, writer } = await writerFor(
      0,
      pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    );
    await sessions.patchStatus(ns, name, { phase: 'Cancelled' });
    writer.addProgress('the agent said one more thing'); // the run's first line: written at once, in the background
    writer.setResult({ costUsd: 0.02 }); // batched: the next write, also in the background
    await new Promise((resolve) => setTimeout(resolve, 0)); // the batch's timer has fired: its write is queued
    await writer.load(); // queued behind both writes
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.map((l) => l.msg)).toEqual(['the Session has ended: later status changes are not written']);
    const session = (await sessions.get(ns, name))!;
    expect([session.status?.phase, session.status?.progress, session.status?.result]).toEqual([
      'Cancelled',
      undefined,
      undefined,
    ]);
  });
});
