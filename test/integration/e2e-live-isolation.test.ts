// End to end, as an attacker, with live runners: command 1's agent leaves behind what it can — a
// double-forked process writing into the checkout, another holding an flock on a workspace file,
// files in its temporary folder (one in a folder it closed) — and its changes are approved.
// Command 2 of the same phone runs in the same Pod (warm) after the reset: its agent finds none of
// it, and its review and pull request hold only its own change. The real Claude Code against the
// scripted model; the local node agent runs as root here (the agent's uid is the Pod's own).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentFolder, type Phone } from '../support/e2e.ts';
import { bindings, useLiveStack } from '../support/live-runner.ts';
import { bareGit, fileAt, tipOf } from '../support/pull-loop.ts';

const live = useLiveStack({ numbers: ['+14155550291'], keepAlive: '10m' });

/** Command 1's agent: each thing it leaves is named `by-one`, so it can be looked for. */
const PLANT = `T="\${TMPDIR:-/tmp}"
setsid -f sh -c 'while :; do date > leak-by-one.txt; sleep 0.1; done' >/dev/null 2>&1
setsid -f flock "$HOME/held-by-one.lock" sleep 86401 >/dev/null 2>&1
while flock -n "$HOME/held-by-one.lock" true; do sleep 0.05; done
echo one > "$T/left-by-one.txt"
mkdir "$T/closed-by-one" && echo secret > "$T/closed-by-one/f" && chmod 000 "$T/closed-by-one"
echo "tmp=$T" > one.txt
`;

/** Command 2's agent: what it can see of command 1's leftovers, into probe.txt (its one change). */
const PROBE = `T="\${TMPDIR:-/tmp}"
echo "writers: $(pgrep -fc 'leak-by-one')"
echo "sleepers: $(pgrep -fc 'sleep 86401')"
flock -n "$HOME/held-by-one.lock" echo "lock: free" || echo "lock: held"
echo "in tmp: $(ls -A "$T" | grep -c by-one)"
`;

/** Processes on the machine whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^[0-9]+$/.test(name) && Number(name) !== process.pid)
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Runs `script` through the agent's Bash (allowed from the phone), then approves its changes (`published`). */
async function command(phone: Phone, script: string, published: RegExp): Promise<void> {
  await phone.send(`script:\ntool: Bash ${JSON.stringify({ command: script })}\nsay: Done.`);
  await phone.next(/🔐/, 90_000);
  await phone.send('allow');
  await phone.next(/Reply \*approve\*/, 90_000);
  await phone.send('approve');
  await phone.next(published, 90_000);
}

describe('end to end: isolation between two commands on one live runner', () => {
  it(
    "nothing command 1's agent left reaches command 2 on the same Pod; command 2's review holds only its own change",
    { timeout: 300_000 },
    async () => {
      const { e2e } = live;
      const folder = agentFolder(e2e, 'live-isolation-');
      writeFileSync(join(folder, 'plant.sh'), PLANT, { mode: 0o644 });
      writeFileSync(join(folder, 'probe.sh'), PROBE, { mode: 0o644 });
      const phone = e2e.phone('+14155550291');
      try {
        await command(phone, `sh ${folder}/plant.sh`, /Pull request opened/);
        const [one] = await live.sessionsOf(phone);
        const pod = one!.status!.podName!;
        const [pull] = e2e.github.pulls;
        const afterOne = tipOf(e2e.remote, pull!.head);
        // Claude Code's tools had the agent container's own temporary folder.
        expect(fileAt(e2e.remote, afterOne, 'one.txt').trim()).toMatch(/^tmp=\/.*\/agent-tmp$/);

        // The next command continues the pull request on the workspace command 1 left.
        await command(phone, `sh ${folder}/probe.sh > probe.txt 2>&1`, /Pushed to pull request #1/);
        const sessions = await live.sessionsOf(phone);
        expect(bindings(sessions)).toEqual([`Succeeded cold ${pod}`, `Succeeded warm ${pod}`]);
        const afterTwo = tipOf(e2e.remote, pull!.head);
        expect(fileAt(e2e.remote, afterTwo, 'probe.txt').trim()).toBe('writers: 0\nsleepers: 0\nlock: free\nin tmp: 0');
        // Its review and push hold its own change only: nothing written after command 1's review.
        expect(bareGit(e2e.remote, 'diff', '--name-only', afterOne, afterTwo).trim().split('\n')).toEqual([
          'probe.txt',
        ]);

        // From outside: none of command 1's processes, nothing of it in the agent's temporary folder.
        expect(processesWith('leak-by-one')).toEqual([]);
        expect(processesWith('sleep\u000086401')).toEqual([]);
        const agentTmps = readdirSync(join(e2e.stateDir, 'e'))
          .map((uid8) => join(e2e.stateDir, 'e', uid8, 'agent-tmp'))
          .filter((dir) => existsSync(dir));
        expect(agentTmps.length).toBeGreaterThan(0);
        for (const dir of agentTmps) expect(readdirSync(dir).filter((n) => n.includes('by-one'))).toEqual([]);
      } finally {
        for (const pid of [...processesWith('leak-by-one'), ...processesWith('sleep\u000086401')])
          process.kill(pid, 'SIGKILL');
      }
    },
  );
});
