// `make dev` as a newcomer runs it, with a second local repository in TETHER_REPOS: the script
// prints the chat URL, a command sent through the web chat on each repository is worked on by the
// real Claude Code (the scripted model's demo) and comes back as a "pull request" pushed to that
// repository's remote, and Ctrl-C (SIGINT) leaves nothing running.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { ensureSampleRepo, sampleRepoPath } from '../../local/sample-repo.ts';
import { eventually } from '../support/eventually.ts';
import {
  chatShows,
  chatUrlOf,
  claudeCodeUnder,
  demoToPullRequest,
  openChat,
  processesMentioning,
  startMakeDev,
} from '../support/make-dev.ts';

/** The local IPv4 addresses listening on a TCP port (from /proc/net/tcp; state 0A = LISTEN). */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A')
    .map((fields) =>
      fields[1]!
        .split(':')[0]!
        .match(/../g)!
        .reverse()
        .map((byte) => parseInt(byte, 16))
        .join('.'),
    );
}

/** The branches Tether pushed to a local remote (read as another uid may own it). */
const tetherBranches = (remote: string) =>
  execFileSync('git', ['-c', `safe.directory=${remote}`, '-C', remote, 'branch', '--list', 'tether/*'], {
    encoding: 'utf8',
  })
    .split('\n')
    .map((b) => b.trim())
    .filter(Boolean);
const count = (text: string, pattern: RegExp) => [...text.matchAll(new RegExp(pattern, 'g'))].length;

describe('make dev', () => {
  it(`prints the chat URL, turns a chat command on each of two local repositories into a pull request, and stops \
cleanly on Ctrl-C`, async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tether-dev-'));
    const widgetsDir = mkdtempSync(join(tmpdir(), 'tether-widgets-'));
    chmodSync(widgetsDir, 0o755); // the runner runs as its own user
    const widgets = await ensureSampleRepo(widgetsDir);
    const port = await freePort();
    const dev = startMakeDev(process.cwd(), {
      TETHER_STATE_DIR: stateDir,
      TETHER_DEV_PORT: String(port),
      TETHER_REPOS: JSON.stringify([{ name: 'widgets', url: widgets }]),
    });
    try {
      const chatUrl = await chatUrlOf(dev);
      expect(dev.output()).toMatch(/kubectl get sessions -n tether/);
      expect(dev.output()).toMatch(/Agent:\s+Claude Code with the scripted model/);
      expect(listeningAddresses(port)).toEqual(['127.0.0.1']); // the relay is not on the network
      const { cookie } = await openChat(chatUrl); // the token for a cookie (303)
      expect((await fetch(new URL('/chat', chatUrl), { headers: { cookie } })).status).toBe(200);
      expect((await fetch(chatUrl.replace(/token=\w+/, 'token=wrong'), { redirect: 'manual' })).status).toBe(401);

      const seen = new Set<number>();
      const watch = setInterval(() => claudeCodeUnder(stateDir).forEach((pid) => seen.add(pid)), 100);
      await demoToPullRequest(dev, chatUrl, () => {
        clearInterval(watch);
        expect(seen.size, 'the real Claude Code worked on the command').toBeGreaterThan(0);
        expect(dev.output()).toMatch(/runner ready .*agent=claude \(scripted model at http:\/\/127\.0\.0\.1:\d+\)/);
      });
      expect(tetherBranches(sampleRepoPath(join(stateDir, 'remote')))).toHaveLength(1);

      // The second repository: the controller's host list holds it too, so the command runs there.
      const chat = await openChat(chatUrl);
      expect((await chat.send('dev-test-0003', '@widgets add a farewell function')).status).toBe(202);
      await chatShows(chatUrl, chat.cookie, /On it \(session [0-9a-f]{4}\) in \*widgets\*/);
      await eventually(() => expect(count(dev.output(), /to=AwaitingApproval/)).toBe(2), 120_000, 200);
      expect(dev.output()).not.toMatch(/could not be started|not on this install's list/);
      expect((await chat.send('dev-test-0004', 'approve')).status).toBe(202);
      await eventually(() => expect(count(dev.output(), /to=Succeeded reason=Published/)).toBe(2), 120_000, 200);
      expect(tetherBranches(widgets)).toHaveLength(1);
    } finally {
      dev.child.kill('SIGINT');
    }
    expect(await dev.exited).toBe(0);
    await eventually(() => expect(processesMentioning(stateDir)).toEqual([]), 15_000, 200);
    await eventually(async () =>
      expect(
        await fetch(`http://127.0.0.1:${port}/healthz`).then(
          () => 'up',
          () => 'down',
        ),
      ).toBe('down'),
    );
  }, 360_000);
});
