// Traps the agent leaves on the workspace for the next command: a FIFO, a symlink to /dev/zero or a
// 2 GB sparse file at every path the runner touches there (the base marker, a tracked file, a new
// file, .gitignore, .gitattributes). The real runner, one Session planting them (its review is
// rejected), then the next Session on the same workspace: its agent must start — the runner neither
// blocked on a FIFO nor reading without end (the runner's own read count says so). What the agent
// itself then does with the traps (Claude Code's own `git status` blocks on a FIFO .gitignore) is
// its own: the test cancels it.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { isTerminal } from '../../common/session/state-machine.ts';
import {
  answer,
  createStartedSession,
  makeRemote,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
  type RunnerProcess,
} from '../support/runner.ts';

const bed = useRunnerTestbed('traps');
const TRAPPED = ['../.tether-repo-base', 'README.md', 'new', '.gitignore', '.gitattributes'];
/** Far below one read of the /dev/zero marker (Node gives up on it at 512 MiB), far above a runner's own reads. */
const MOST_BYTES_READ = 256 * 1024 ** 2;

/**
 * The most bytes the runner's own threads had read (rchar of /proc/<pid>/task/<tid>/io), sampled
 * until it exits. Per thread: a process's total also counts the children it reaped (the agent and
 * its git, which read the traps as they like).
 */
function readCount(runner: RunnerProcess): () => number {
  let most = 0;
  const sample = () => {
    try {
      const tasks = readdirSync(`/proc/${runner.child.pid}/task`);
      const read = tasks.map((tid) =>
        Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${runner.child.pid}/task/${tid}/io`, 'utf8'))![1]),
      );
      most = Math.max(
        most,
        read.reduce((a, b) => a + b, 0),
      );
    } catch {
      // the process (or a thread) has exited: the last sample stands
    }
  };
  const timer = setInterval(sample, 50);
  void runner.exited.then(() => clearInterval(timer));
  return () => most;
}

describe.concurrent('the next command after traps on the workspace', { timeout: 240_000 }, () => {
  for (const [kind, make, said] of [
    ['a FIFO', 'mkfifo "$p"', 'not a regular file, folder or symlink'],
    ['a symlink to /dev/zero', 'ln -s /dev/zero "$p"', undefined],
    ['a 2 GB sparse file', 'truncate -s 2G "$p"', 'larger than'],
  ] as const) {
    it(`${kind} at every path the runner touches: the review comes, and the next command's agent starts`, async () => {
      const remote = makeRemote();
      const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
      const runOn = async (prompt: string) => {
        const name = await createStartedSession(bed.sessions, bed.ns, specFor(prompt, remote.url));
        const runner = startRunner({
          kubeconfig: inject('kubeconfig'),
          namespace: bed.ns,
          name,
          workspace,
          env: bed.env(),
        });
        return { name, runner, read: readCount(runner) };
      };
      const plant = `for p in ${TRAPPED.join(' ')}; do rm -f "$p"; ${make}; done`;
      const first = await runOn(`script:\ntool: Bash ${JSON.stringify({ command: plant })}\nsay: planted`);
      await answer(bed.sessions, bed.ns, first.name, 'tool', { action: 'allow' });
      const review = await answer(bed.sessions, bed.ns, first.name, 'changes', { action: 'reject' });
      expect(await first.runner.exited, first.runner.output()).toBe(0);
      expect(review.status?.result?.diffStat).toContain('README.md');
      if (said)
        expect(review.status?.progress?.map((p) => p.text).join('\n')).toMatch(
          new RegExp(`Left out of the changes: .*README\\.md \\(${said}`),
        );

      const next = await runOn('script:\nsay: hello again');
      await waitFor(
        bed.sessions,
        bed.ns,
        next.name,
        (s) => !!s.status?.result?.agentSessionId || isTerminal(s.status?.phase),
      );
      await bed.sessions.patch(bed.ns, next.name, { spec: { cancel: true } });
      expect(await next.runner.exited, next.runner.output()).toBe(0);
      const done = (await bed.sessions.get(bed.ns, next.name))!;
      expect(['Succeeded', 'Cancelled'], JSON.stringify(done.status)).toContain(done.status?.phase);
      for (const run of [first, next]) expect(run.read()).toBeLessThan(MOST_BYTES_READ);
    });
  }
});
