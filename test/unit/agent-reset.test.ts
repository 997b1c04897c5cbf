// reset(): between two Sessions on one Pod, what one command's agent left in the agent container —
// background processes (setsid'd, double-forked), files in its temporary folder, a held lock, its
// environment — reaches none of the next command's processes, and the agent host is a new process
// image. Real processes through the real channel; the agent host in its own PID namespace (as in a
// Pod) and under a uid of its own (as the local node agent runs it), both as root.
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import {
  finished,
  firstLines,
  request,
  runningWithArgv,
  startPair,
  type Finished,
  type Pair,
  canUnshare as unshareWorks,
} from '../support/agent-channel.ts';

let pair: Pair | undefined;
/** Tags of this run's sleepers: a failed test's survivors are killed, and never counted by another run. */
const tags: string[] = [];
const newTag = (digit: number) => tags[tags.push(`${digit}${process.pid}`) - 1]!;
afterEach(async () => {
  await pair?.stop();
  pair = undefined;
  for (const pid of tags.flatMap(left)) process.kill(pid, 'SIGKILL');
}, 30_000);

const asRoot = process.getuid?.() === 0;
const canUnshare = unshareWorks();

/** A folder the agent host's uid owns, closed to others. */
function ownedFolder(name: string, uid: number): string {
  const dir = mkdtempSync(join(tmpdir(), `tether-reset-${name}-`));
  chownSync(dir, uid, uid);
  chmodSync(dir, 0o700);
  return dir;
}

/** Command 1's agent: everything it can leave behind, each tagged so it can be found from outside. */
const HOSTILE = (tag: string, workspace: string, outside: string) =>
  [
    'export LEAK=from-command-1',
    `setsid sleep 300.${tag}1 >/dev/null 2>&1 &`,
    `(setsid sh -c 'exec sleep 300.${tag}2 >/dev/null 2>&1' &)`, // double-forked: its parent is gone
    `(setsid flock ${workspace}/lock sleep 300.${tag}3 >/dev/null 2>&1 &)`,
    `mkdir "$TMPDIR/closed" && touch "$TMPDIR/closed/secret" && chmod 000 "$TMPDIR/closed"`,
    `echo 'export LEAK=from-a-dotfile' > "$TMPDIR/.bashrc"`,
    `ln -s ${outside} "$TMPDIR/link-to-outside" && mkfifo "$TMPDIR/fifo"`,
    `while flock -n ${workspace}/lock true; do sleep 0.02; done`, // until the background flock holds it
    'echo planted',
  ].join('\n');

const left = (tag: string) => [1, 2, 3].flatMap((n) => runningWithArgv(['sleep', `300.${tag}${n}`]));

/** Runs command 1's hostile script and waits until all it leaves is in place. */
async function plant(p: Pair, tag: string, tmp: string, workspace: string, outside: string): Promise<void> {
  const sh = p.channel.spawn(request('sh', ['-c', HOSTILE(tag, workspace, outside)], { cwd: workspace }));
  const done = finished(sh);
  expect(await firstLines(sh, 1)).toEqual(['planted']);
  expect((await done).code).toBe(0);
  await eventually(() => expect(left(tag)).toHaveLength(3), 10_000);
  expect(readdirSync(tmp).sort()).toEqual(['.bashrc', 'closed', 'fifo', 'link-to-outside']);
}

/** Command 2's view: its environment, the temporary folder, the lock. */
const NEXT = (workspace: string) =>
  `env | sort; echo "tmp: $(ls -A "$TMPDIR" | tr '\\n' ' ')"; flock -n ${workspace}/lock echo "lock: free"`;

async function afterReset(p: Pair, workspace: string): Promise<Finished> {
  return finished(p.channel.spawn(request('sh', ['-c', NEXT(workspace)], { env: { PATH: process.env.PATH! } })));
}

describe('agent channel: reset between two Sessions', { timeout: 60_000 }, () => {
  it.runIf(canUnshare)(
    'in its own PID namespace (as in a Pod): nothing command 1 left reaches command 2; the agent host re-executed',
    async () => {
      const tmp = ownedFolder('tmp', 0);
      const workspace = ownedFolder('ws', 0);
      const outside = join(ownedFolder('outside', 0), 'keep');
      mkdirSync(outside);
      pair = await startPair({ ownPidNamespace: true, env: { TMPDIR: tmp } });
      const before = await pair.channel.connected();
      expect(before.freeze).toBe('namespace');
      const tag = newTag(5);
      await plant(pair, tag, tmp, workspace, outside);

      const asked = Date.now();
      const report = await pair.channel.reset();
      expect(report).toMatchObject({ mode: 'namespace', lingering: 0, removed: 4, pid: before.pid });
      expect(report.killed).toBeGreaterThanOrEqual(3);
      expect(report.startedAt).toBeGreaterThan(asked); // a new process image, the same process (PID 1)
      expect(left(tag)).toEqual([]);
      expect(readdirSync(tmp)).toEqual([]);
      expect(existsSync(outside)).toBe(true); // the link went, not what it named

      const next = await afterReset(pair, workspace);
      expect(next.code).toBe(0);
      const lines = next.stdout.toString().trim().split('\n');
      expect(lines.filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split('=')[0])).toEqual(['PATH', 'PWD', 'TMPDIR']);
      expect(lines).toContain(`TMPDIR=${tmp}`);
      expect(lines).toContain('tmp: ');
      expect(lines).toContain('lock: free');
      expect(next.stdout.toString()).not.toContain('LEAK');
    },
  );

  it.runIf(asRoot)(
    'under a uid of its own (the local node agent): kill(-1) as that uid reaches the double-forked daemon, ' +
      'at the end of the run and at the reset',
    async () => {
      // A uid no other test or user has: kill(-1) as it reaches that uid's processes alone.
      const uid = 2_000_000_000 + Math.floor(Math.random() * 100_000_000);
      const tmp = ownedFolder('tmp', uid);
      const workspace = ownedFolder('ws', uid);
      const outside = join(ownedFolder('outside', uid), 'keep');
      mkdirSync(outside);
      chownSync(outside, uid, uid);
      pair = await startPair({ uid, env: { TMPDIR: tmp } });
      const before = await pair.channel.connected();
      expect(before.freeze).toBe('uid');
      const environ = () => readFileSync(`/proc/${pair!.host.child.pid}/environ`, 'utf8').split('\0').filter(Boolean);
      const started = environ();
      const tag = newTag(6);
      await plant(pair, tag, tmp, workspace, outside);
      const report = await pair.channel.reset();
      expect(report).toMatchObject({ mode: 'uid', lingering: 0, removed: 4, pid: pair.host.child.pid });
      expect(left(tag)).toEqual([]);
      expect(readdirSync(tmp)).toEqual([]);
      // The re-exec'd agent host's environment is its first one and the reset's nonce, nothing else.
      expect(environ().filter((v) => !v.startsWith('TETHER_AGENT_RESUMES='))).toEqual(started);
      expect(environ().filter((v) => v.startsWith('TETHER_AGENT_RESUMES='))).toHaveLength(1);
      const next = await afterReset(pair, workspace);
      expect(next.stdout.toString()).toContain('tmp: \n');
      expect(next.stdout.toString()).toContain('lock: free');

      // A second reset works the same way (a new nonce, a new process image).
      const again = await pair.channel.reset();
      expect(again.startedAt).toBeGreaterThan(report.startedAt);
      // The end-of-run freeze reaches them too (the snapshot is read with none of them left).
      const second = newTag(7);
      await plant(pair, second, tmp, workspace, outside);
      expect(await pair.channel.freeze()).toMatchObject({ mode: 'uid', lingering: 0 });
      expect(left(second)).toEqual([]);
    },
  );

  it(`refuses a reset without a temporary folder of its own: the agent container stays frozen, the \
channel open`, async () => {
    pair = await startPair();
    await expect(pair.channel.reset()).rejects.toThrow(
      'the agent container was not reset: the temporary folder could not be emptied: TMPDIR is not set',
    );
    const late = await finished(pair.channel.spawn(request('true', [])));
    expect(late.error?.message).toBe('cannot start the process: the agent container is frozen');
  });
});
