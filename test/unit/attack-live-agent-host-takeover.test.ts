// Attack on the reset between two Sessions of a live runner: command 1's agent runs as the agent
// host's own uid, so it can open the agent host's inspector (SIGUSR1) and run code in it. It patches
// the freeze to pass over a daemon it started; the reset then reports success and the daemon lives on
// into command 2 (docs/security.md, "Between commands": "a modified agent host process … a new agent host
// process image" — the new image comes after the freeze it no longer ran). Real processes through the
// real channel; the agent host as PID 1 of its own PID namespace, as in a Pod.
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import {
  canUnshare,
  finished,
  firstLines,
  REPO_ROOT,
  request,
  runningWithArgv,
  startPair,
  type Pair,
} from '../support/agent-channel.ts';

const TAKEOVER = join(REPO_ROOT, 'test/fixtures/agent-host-takeover.ts');
const tag = `9${process.pid}`;
const daemon = () => runningWithArgv(['sleep', `300.${tag}`]);
let pair: Pair | undefined;

afterEach(async () => {
  await pair?.stop();
  pair = undefined;
  for (const pid of daemon()) process.kill(pid, 'SIGKILL');
}, 30_000);

/** Command 1's agent: a double-forked daemon, then the agent host taken over to spare it. */
const HOSTILE = [
  `(setsid sh -c 'echo $$ > "$TMPDIR/daemon.pid"; exec sleep 300.${tag}' >/dev/null 2>&1 &)`,
  'while [ ! -s "$TMPDIR/daemon.pid" ]; do sleep 0.02; done',
  `"${process.execPath}" "${TAKEOVER}" 1 "$(cat "$TMPDIR/daemon.pid")"`,
].join('\n');

/** The agent host as in a Pod, command 1 run there: its daemon started, the agent host taken over. */
async function takeOver(): Promise<string | undefined> {
  const tmp = mkdtempSync(join(tmpdir(), 'tether-takeover-'));
  chmodSync(tmp, 0o700);
  pair = await startPair({ ownPidNamespace: true, env: { TMPDIR: tmp } });
  expect((await pair.channel.connected()).freeze).toBe('namespace');
  const sh = pair.channel.spawn(request('sh', ['-c', HOSTILE], { cwd: tmp }));
  const done = finished(sh);
  const [said] = await firstLines(sh, 1);
  await done;
  expect(daemon()).toHaveLength(1);
  return said;
}

it.runIf(canUnshare())(
  'a daemon command 1 left does not outlive the reset, even when command 1 took over the agent host',
  { timeout: 60_000 },
  async () => {
    const said = await takeOver();

    const outcome = await pair!.channel.reset().then(
      () => 'reset',
      (error: Error) => `refused: ${error.message}`,
    );
    // Either the reset refuses (the Pod then serves nothing more) or nothing of command 1 runs on.
    if (outcome === 'reset') expect({ said, daemon: daemon() }).toEqual({ said, daemon: [] });
  },
);

it.runIf(canUnshare())(
  'the end-of-run freeze (before the snapshot) stops a daemon the agent left, even when it took over the agent host',
  { timeout: 60_000 },
  async () => {
    const said = await takeOver();

    const lingering = await pair!.channel.freeze().then(
      (report) => report.lingering,
      () => -1,
    );
    // The supervisor snapshots the workspace once the freeze reports nothing lingering: then nothing may run on.
    if (lingering === 0) expect({ said, daemon: daemon() }).toEqual({ said, daemon: [] });
  },
);
