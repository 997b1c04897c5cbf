// freeze(): every process of the agent container stopped before the supervisor snapshots the tree.
// Locally (the agent host in the host's PID namespace) it reaches the spawned processes' groups and
// sessions and everything below the agent host, but not a double-forked daemon that left its session;
// in its own PID namespace (as in a Pod, here with unshare as root) it reaches everything.
import { afterEach, describe, expect, it } from 'vitest';
import { detectFreezeMode } from '../../runner-image/agent-host/freeze.ts';
import { descendants, parseStat } from '../../runner-image/agent-host/procfs.ts';
import { eventually } from '../support/eventually.ts';
import {
  finished,
  firstLines,
  request,
  running,
  runningWithArgv,
  startPair,
  type Pair,
  canUnshare as unshareWorks,
} from '../support/agent-channel.ts';

let pair: Pair | undefined;
afterEach(async () => {
  await pair?.stop();
  pair = undefined;
}, 30_000);

/** A process tree with a child, a setsid'd grandchild, a double-forked daemon and a process that keeps forking. */
const tree = (tag: string) =>
  [
    `sleep 300.${tag}1 & echo child $!`,
    `setsid sleep 300.${tag}2 & echo setsid $!`,
    `(setsid sh -c 'echo daemon $$; exec sleep 300.${tag}3 >/dev/null 2>&1' &)`,
    `(while :; do sleep 300.${tag}4 & sleep 0.02; done) >/dev/null 2>&1 &`,
    'wait',
  ].join('\n');

async function startTree(p: Pair, tag: string) {
  const sh = p.channel.spawn(request('sh', ['-c', tree(tag)]));
  const ended = finished(sh);
  const lines = await firstLines(sh, 3);
  const pids = Object.fromEntries(lines.map((l) => l.split(' ')).map(([name, pid]) => [name!, Number(pid)]));
  await eventually(() => expect(runningWithArgv(['sleep', `300.${tag}4`]).length).toBeGreaterThan(2), 10_000);
  return { sh, ended, pids };
}

const canUnshare = unshareWorks();

describe('agent channel: how the agent host finds what to stop', () => {
  it('uses kill(-1) only as PID 1, as the child of a container init, or under a uid given to it alone', () => {
    const self = (pid: number, ppid: number, uid = 0, parentUid: number | undefined = 0) => ({
      pid,
      ppid,
      uid,
      parentUid,
    });
    expect(detectFreezeMode(self(1, 0), 'node')).toBe('namespace');
    expect(detectFreezeMode(self(7, 1), 'tini')).toBe('namespace');
    expect(detectFreezeMode(self(7, 1), 'systemd')).toBe('groups');
    expect(detectFreezeMode(self(7, 1), undefined)).toBe('groups');
    expect(detectFreezeMode(self(4242, 4000), 'tini')).toBe('groups');
    // The local node agent (root) starting it under a uid of the Pod's range: kill(-1) as that uid.
    expect(detectFreezeMode(self(4242, 4000, 100_701_001, 0), 'systemd')).toBe('uid');
    // Its parent's own uid (a developer's make dev), root, or a parent it cannot read: never kill(-1).
    expect(detectFreezeMode(self(4242, 4000, 1000, 1000), 'systemd')).toBe('groups');
    expect(detectFreezeMode(self(4242, 4000, 0, 1000), 'systemd')).toBe('groups');
    expect(detectFreezeMode({ ...self(4242, 4000, 1000), parentUid: undefined }, 'systemd')).toBe('groups');
  });

  it('reads /proc/<pid>/stat whatever the command name holds, and follows parent links', () => {
    expect(parseStat('4242 (a) b (c) S 4000 4242 4100 0 -1')).toEqual({
      pid: 4242,
      state: 'S',
      ppid: 4000,
      pgrp: 4242,
      session: 4100,
    });
    const p = (pid: number, ppid: number) => ({ pid, ppid, pgrp: pid, session: pid, uid: 0, state: 'S' });
    expect([...descendants([p(10, 1), p(11, 10), p(12, 11), p(13, 1), p(14, 12)], 10)].sort()).toEqual([11, 12, 14]);
  });
});

describe('agent channel: freeze', { timeout: 60_000 }, () => {
  it(`locally: kills the spawned groups, their sessions \
and every descendant; a double-forked daemon escapes`, async () => {
    pair = await startPair();
    expect((await pair.channel.connected()).freeze).toBe('groups');
    const { sh, ended, pids } = await startTree(pair, '1');
    for (const pid of [sh.pid!, pids.child!, pids.setsid!, pids.daemon!]) expect(running(pid)).toBe(true);

    const report = await pair.channel.freeze();
    expect(report.mode).toBe('groups');
    expect(report.killed).toBeGreaterThanOrEqual(5);
    expect(report.lingering).toBe(0);
    expect(await ended).toMatchObject({ code: null, signal: 'SIGKILL' });
    for (const pid of [sh.pid!, pids.child!, pids.setsid!]) expect(running(pid)).toBe(false);
    expect(runningWithArgv(['sleep', '300.14'])).toEqual([]);
    // What the local mode cannot reach: left its session, and its parent is gone (re-parented to init).
    expect(running(pids.daemon!)).toBe(true);
    process.kill(pids.daemon!, 'SIGKILL');

    const late = await finished(pair.channel.spawn(request('true', [])));
    expect(late.error).toMatchObject({
      message: 'cannot start the process: the agent container is frozen',
      code: 'EFROZEN',
    });
  });

  it.runIf(canUnshare)(
    'in its own PID namespace (as in a Pod): kills everything, the double-forked daemon included',
    async () => {
      pair = await startPair({ ownPidNamespace: true });
      expect((await pair.channel.connected()).freeze).toBe('namespace');
      const { ended } = await startTree(pair, '2');
      const daemon = runningWithArgv(['sleep', '300.23']); // seen from outside the namespace
      expect(daemon).toHaveLength(1);

      const report = await pair.channel.freeze();
      expect(report.mode).toBe('namespace');
      expect(report.killed).toBeGreaterThanOrEqual(6);
      expect(report.lingering).toBe(0);
      expect(await ended).toMatchObject({ code: null, signal: 'SIGKILL' });
      for (const n of [1, 2, 3, 4]) expect(runningWithArgv(['sleep', `300.2${n}`])).toEqual([]);
      // The agent host itself is still there and answers.
      expect((await finished(pair.channel.spawn(request('true', [])))).error?.message).toContain('frozen');
    },
  );
});
