// End to end, as an attacker: a process that outlived the freeze (another uid of the Pod's, as the
// freeze leaves no process of the agent's own) swaps folders of the checkout for symlinks — to the
// runner's private git store and to the Pod's ServiceAccount token, which only the supervisor can
// read — with renameat2(RENAME_EXCHANGE), as fast as it can, while the
// runner snapshots the checkout. The changes are approved. Neither the review, the Session, the
// phone nor the pushed branch holds anything of the store or the token, and the store is intact.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerIdOf } from '../../local/node-agent/id-ranges.ts';
import { agentFolder, startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { filesContaining } from '../support/files.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const GITHUB_CANARY = 'ghp_canaryCANARYcanary0123456789abcd';
const PAIRS = 20;
const model = useScriptedModel();
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ runnerSecrets: { GITHUB_TOKEN: GITHUB_CANARY }, podEnv: model.env() });
}, 90_000);
afterAll(async () => e2e?.stop());

/**
 * dN (a folder holding x.txt) and lN (a symlink to a target) trade places, atomically, over and over; gone after 10
 * minutes.
 */
const SWAPPER = `
use strict;
my ($pairs, @targets) = @ARGV;
alarm 600;
for my $i (0 .. $pairs - 1) {
  mkdir "d$i" or die "mkdir: $!";
  open(my $file, '>', "d$i/x.txt") or die "open: $!";
  print $file "mine $i\\n";
  close $file;
  symlink($targets[$i % @targets], "l$i") or die "symlink: $!";
}
my $renameat2 = ${arch() === 'arm64' ? 276 : 316};
while (1) {
  for my $i (0 .. $pairs - 1) { syscall($renameat2, -100, "d$i", -100, "l$i", 2) == 0 or die "renameat2: $!" }
}
`;

/** Pids of live processes whose command line holds `needle`. */
function processesWith(needle: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle) ? [Number(pid)] : [];
      } catch {
        return [];
      }
    });
}

describe('end to end: a process swapping folders for symlinks while the runner snapshots', () => {
  it(
    'the review, the Session, the phone and the pushed branch hold nothing of the store or the token; the store is ' +
      'intact',
    { timeout: 180_000 },
    async () => {
      const folder = agentFolder(e2e, 'swapper-');
      const swapper = join(folder, 'swap.pl');
      const phone = e2e.phone('+14155550123');
      // The freeze kills every process of the agent's uid (locally too: kill(-1) as the Pod's own uid), so the
      // swapper stands for one that outlived it: started by the test in the agent's checkout (which the agent's
      // command names), as another uid of the Pod's range with the Pod's group.
      const named = join(folder, 'named');
      mkdirSync(named, { mode: 0o777 });
      chmodSync(named, 0o777);
      const start = `pwd > ${named}/cwd; sleep 2`;
      await phone.send(`script:\ntool: Bash ${JSON.stringify({ command: start })}\nsay: Named the checkout.`);
      await phone.next(/🔐/, 60_000);
      // The runner Pod's private places, known once it runs: the git store (its workspace's store claim) and its token.
      const [podDir] = readdirSync(join(e2e.stateDir, 'pods'));
      const [running] = await e2e.list();
      const storeClaim = `${running!.spec.workspace}.git`;
      const store = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, storeClaim, 'store.git');
      const tokens = join(e2e.stateDir, 'pods', podDir!, 'volumes', 'kube-api-access');
      const token = readFileSync(join(tokens, 'token'), 'utf8');
      const storeConfig = readFileSync(join(store, 'config'), 'utf8');
      writeFileSync(swapper, SWAPPER, { mode: 0o644 });
      try {
        await phone.send('allow');
        const checkout = await eventually(() => readFileSync(join(named, 'cwd'), 'utf8').trim(), 60_000);
        const { uid, gid } = statSync(checkout);
        const outlived = uid - containerIdOf(uid) + 4242;
        spawn(
          'setpriv',
          [
            `--reuid=${outlived}`,
            `--regid=${gid}`,
            '--clear-groups',
            '--',
            'sh',
            '-c',
            'umask 002; exec setsid -f perl "$@"', // group-writable, as the agent's files are: the revert removes them
            'sh',
            swapper,
            String(PAIRS),
            store,
            tokens,
          ],
          { cwd: checkout, stdio: 'ignore' },
        );
        await phone.next(/Reply \*approve\*/, 90_000);
        // It swapped all through the snapshot (the freeze does not reach another uid's process).
        expect(processesWith(swapper)).toHaveLength(1);
        await phone.send('approve');
        await phone.next(/Pull request opened/, 90_000);
      } finally {
        for (const pid of processesWith(swapper)) process.kill(pid, 'SIGKILL');
      }
      const [session] = await e2e.list();
      const pull = e2e.github.pulls[0]!;
      const remoteGit = (...args: string[]) =>
        execFileSync('git', ['-c', `safe.directory=${e2e.remote}`, '-C', e2e.remote, ...args], { encoding: 'latin1' });
      const pushedPaths = remoteGit('ls-tree', '-r', '--name-only', pull.head).split('\n').filter(Boolean);
      const basePaths = remoteGit('ls-tree', '-r', '--name-only', 'main').split('\n').filter(Boolean);
      // Only the agent's own: its folders' x.txt, and the symlinks themselves (text, never followed).
      expect(pushedPaths.filter((p) => !basePaths.includes(p) && !/^[dl]\d+(\/x\.txt)?$/.test(p))).toEqual([]);
      const pushed = remoteGit('log', '-p', `main..${pull.head}`);
      const places: Array<[string, string]> = [
        ['pushed branch', pushed],
        ['Session', JSON.stringify(session)],
        ['phone', JSON.stringify(phone.received())],
      ];
      for (const needle of [token.trim(), storeConfig.trim(), 'repositoryformatversion', GITHUB_CANARY]) {
        expect(
          places.filter(([, text]) => text.includes(needle)).map(([where]) => where),
          needle.slice(0, 40),
        ).toEqual([]);
      }
      expect(session!.status?.result?.diffStat ?? '').not.toMatch(/\b(config|HEAD|token|ca\.crt|namespace)\b/);
      // The store: still a sound repository, its configuration as the runner wrote it, none of the agent's files in it.
      execFileSync('git', ['-c', `safe.directory=${store}`, '--git-dir', store, 'fsck', '--no-progress'], {
        stdio: 'pipe',
      });
      expect(readFileSync(join(store, 'config'), 'utf8')).toBe(storeConfig);
      expect(filesContaining(join(store, '..'), ['mine 0\n'])).toEqual([]);
      const inStore = execFileSync('find', [join(store, '..'), '-type', 'f'], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean);
      expect(
        inStore.filter((file) => basePaths.some((path) => file.endsWith(`/${path}`)) || file.endsWith('/x.txt')),
      ).toEqual([]);
    },
  );
});
