// A live runner's choices: which Session the phone's Role names is the next one for this Pod, and the
// serving loop (first Session, reset, idle wait, next) with its exit codes.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { V1Role } from '@kubernetes/client-node';
import type { Session } from '../../common/session/schema.ts';
import { parseConfig } from '../../runner-image/config.ts';
import { boundHere, grantedSessions, nextSession, unseenSessions } from '../../runner-image/live/choice.ts';
import { Serve, type LiveParts, type SessionRun } from '../../runner-image/live/serve.ts';

const log = pino({ level: 'silent' });
const POD = 'p1-runner';

const role = (names: string[]): V1Role => ({
  metadata: { name: 'runner-abc' },
  rules: [
    { apiGroups: ['tether.dev'], resources: ['sessions/status'], resourceNames: ['status-only'], verbs: ['patch'] },
    { apiGroups: ['tether.dev'], resources: ['sessions'], resourceNames: names, verbs: ['get', 'watch'] },
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], resourceNames: ['runner-abc'], verbs: ['get'] },
  ],
});

const session = (name: string, status: Session['status'], created = '2026-11-27T05:00:00Z'): Session =>
  ({ metadata: { name, creationTimestamp: created }, spec: {}, status }) as unknown as Session;

describe('the next Session of a live runner', () => {
  it("reads the names of the Role's get rule on sessions, and only those not seen yet", () => {
    expect(grantedSessions(role(['a', 'b']))).toEqual(['a', 'b']);
    expect(grantedSessions(undefined)).toEqual([]);
    expect(grantedSessions({ metadata: {}, rules: [] })).toEqual([]);
    expect(unseenSessions(role(['a', 'b', 'c']), new Set(['a', 'c']))).toEqual(['b']);
  });

  it('is a Session whose status names this Pod and waits in Starting; nothing else', () => {
    expect(boundHere(session('s', { phase: 'Starting', podName: POD }), POD)).toBe(true);
    expect(boundHere(session('s', { phase: 'Starting', podName: 'p2-runner' }), POD)).toBe(false);
    expect(boundHere(session('s', { phase: 'Starting' }), POD)).toBe(false);
    expect(boundHere(session('s', { phase: 'Queued', podName: POD }), POD)).toBe(false);
    expect(boundHere(session('s', { phase: 'Working', podName: POD }), POD)).toBe(false);
    expect(boundHere(session('s', { phase: 'Succeeded', podName: POD }), POD)).toBe(false);
    expect(boundHere(undefined, POD)).toBe(false);
  });

  it('is the earliest bound when several are found', () => {
    const late = session('late', { phase: 'Starting', podName: POD, startTime: '2026-11-27T05:02:00Z' });
    const early = session('early', { phase: 'Starting', podName: POD, startTime: '2026-11-27T05:01:00Z' });
    expect(nextSession([late, early])?.metadata.name).toBe('early');
    expect(nextSession([])).toBeUndefined();
  });
});

/** A Session run that ends with `code` when told to (or at once). */
function fakeRun(code: number, stopped: string[], hold = false): SessionRun & { end(): void } {
  let end!: () => void;
  const done = new Promise<number>((resolve) => (end = () => resolve(code)));
  if (!hold) end();
  return { done, end, stop: (reason) => (stopped.push(reason), end()) };
}

function fakeLive(nextNames: (string | undefined)[], calls: string[]): LiveParts {
  return {
    resetAgent: async () => void calls.push('reset'),
    next: (signal) => {
      calls.push('next');
      const name = nextNames.shift();
      if (name !== 'wait') return Promise.resolve(name);
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve(undefined)));
    },
    close: () => void calls.push('close'),
  };
}

const serve = (runs: Record<string, number>, live?: () => LiveParts | undefined, stopped: string[] = []) => {
  const ran: string[] = [];
  const loop = new Serve({
    first: 'one',
    runSession: (name) => (ran.push(name), fakeRun(runs[name]!, stopped)),
    live,
    log,
    now: () => new Date(),
  });
  return { loop, ran };
};

describe('serving Sessions', () => {
  it('without live: the first Session only, its exit code', async () => {
    const { loop, ran } = serve({ one: 1 });
    expect(await loop.run()).toBe(1);
    expect(ran).toEqual(['one']);
  });

  it('live: reset, then each Session bound here, until none can come', async () => {
    const calls: string[] = [];
    const { loop, ran } = serve({ one: 0, two: 0, three: 0 }, () => fakeLive(['two', 'three', undefined], calls));
    expect(await loop.run()).toBe(0);
    expect(ran).toEqual(['one', 'two', 'three']);
    expect(calls).toEqual(['reset', 'next', 'reset', 'next', 'reset', 'next', 'close']);
  });

  it('live: a run that does not end well ends the process with its code, serving nothing more', async () => {
    const calls: string[] = [];
    const { loop, ran } = serve({ one: 0, two: 1 }, () => fakeLive(['two', 'three'], calls));
    expect(await loop.run()).toBe(1);
    expect(ran).toEqual(['one', 'two']);
    expect(calls).toEqual(['reset', 'next', 'close']);
  });

  it('live: stopped while idle → 0', async () => {
    const calls: string[] = [];
    const { loop } = serve({ one: 0 }, () => fakeLive(['wait'], calls));
    const exited = loop.run();
    while (!calls.includes('next')) await new Promise((r) => setImmediate(r));
    loop.stop('SIGTERM');
    expect(await exited).toBe(0);
    expect(calls).toEqual(['reset', 'next', 'close']);
  });

  it('live: stopped during a run → the run is stopped and nothing more is served', async () => {
    const calls: string[] = [];
    const stopped: string[] = [];
    let first!: ReturnType<typeof fakeRun>;
    const loop = new Serve({
      first: 'one',
      runSession: () => (first = fakeRun(0, stopped, true)),
      live: () => fakeLive(['two'], calls),
      log,
      now: () => new Date(),
    });
    const exited = loop.run();
    loop.stop('SIGTERM');
    expect(await exited).toBe(0);
    expect(stopped).toEqual(['SIGTERM']);
    expect(first).toBeDefined();
    expect(calls).toEqual([]);
  });

  it('live: an agent container that cannot be reset serves no further Session', async () => {
    const live = fakeLive(['two'], []);
    const { loop, ran } = serve({ one: 0, two: 0 }, () => ({
      ...live,
      resetAgent: () => Promise.reject(new Error("2 of the agent's processes did not stop")),
    }));
    await expect(loop.run()).rejects.toThrow('did not stop');
    expect(ran).toEqual(['one']);
  });
});

describe('live runner config', () => {
  const base = { TETHER_SESSION_NAME: 'abc-20261122083000-k3x9', TETHER_SESSION_NAMESPACE: 'tether' };

  it('is off by default; on with the Pod name', () => {
    expect(parseConfig(base).live).toBeUndefined();
    expect(parseConfig({ ...base, TETHER_POD_NAME: POD }).live).toBeUndefined();
    expect(parseConfig({ ...base, TETHER_RUNNER_LIVE: 'true', TETHER_POD_NAME: POD }).live).toEqual({ podName: POD });
  });

  it('refuses live without the Pod name, and a value that is not true or false', () => {
    expect(() => parseConfig({ ...base, TETHER_RUNNER_LIVE: 'true' })).toThrow(/^TETHER_POD_NAME: is required/);
    expect(() => parseConfig({ ...base, TETHER_RUNNER_LIVE: 'yes' })).toThrow(/^TETHER_RUNNER_LIVE/);
    expect(() => parseConfig({ ...base, TETHER_RUNNER_LIVE: 'true', TETHER_POD_NAME: 'Bad_Name' })).toThrow(
      /^TETHER_POD_NAME/,
    );
  });
});
