// `make dev` as root from a checkout other users cannot enter (a clone in root's home or in a
// `mktemp -d` folder: mode 0700), as CI runs it. The containers run what the node agent staged
// for them, not the checkout: a command goes to its pull request, the supervisor and Claude Code
// running from the image store. With the state folder left inside that checkout, make dev
// refuses at start with one line naming the folder and the fix.
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageStoreDir } from '../../local/config.ts';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { RUNNER_IMAGE } from '../../local/node-agent/image-content.ts';
import { imageFolder } from '../../local/node-agent/image-store.ts';
import {
  chatUrlOf,
  claudeCodeUnder,
  demoToPullRequest,
  processesMentioning,
  startMakeDev,
} from '../support/make-dev.ts';

const REPO = join(import.meta.dirname, '../..');

/** This checkout's files (the working tree, as `git clone` plus its changes) and node_modules, under a 0700 folder. */
function closedCopy(): { closed: string; checkout: string } {
  const closed = mkdtempSync(join(tmpdir(), 'tether-closed-'));
  const checkout = join(closed, 'tether');
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  for (const file of listed.split('\0').filter((f) => f && f !== 'node_modules' && existsSync(join(REPO, f)))) {
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    cpSync(join(REPO, file), join(checkout, file));
  }
  // As `npm ci` leaves it, inside the checkout (hard links: quick, and nothing changes them).
  execFileSync('cp', ['-al', realpathSync(join(REPO, 'node_modules')), join(checkout, 'node_modules')]);
  return { closed, checkout };
}

/** What a process runs: its executable and arguments (undefined once it has exited). */
function programOf(pid: number): string | undefined {
  try {
    return [readlinkSync(`/proc/${pid}/exe`), ...readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(1)]
      .join(' ')
      .trim();
  } catch {
    return undefined;
  }
}

describe.runIf(process.getuid?.() === 0)('make dev from a checkout other users cannot enter (root)', () => {
  let copy: { closed: string; checkout: string };
  beforeAll(() => {
    copy = closedCopy();
    expect(statSync(copy.closed).mode & 0o777).toBe(0o700);
  });
  // The copy's image goes with it (the next staging removes images of checkouts that are gone).
  afterAll(() => rmSync(copy.closed, { recursive: true, force: true }));

  it('refuses at start, in one line naming the folder and the fix, when the state folder is inside it', async () => {
    const dev = startMakeDev(copy.checkout, { TETHER_STATE_DIR: '', TETHER_DEV_PORT: String(await freePort()) });
    expect(await dev.exited).toBe(2);
    expect(dev.output()).toBe(
      `make dev: the containers' users cannot reach the state folder ${copy.checkout}/.tether-state: ${copy.closed} ` +
        `is closed ` +
        'to other users (mode 0700); set TETHER_STATE_DIR to a folder outside it (for example ' +
        'TETHER_STATE_DIR=/var/lib/tether)\n',
    );
  });

  it('turns a chat command into a pull request, every container running from the image store', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tether-dev-'));
    const image = imageFolder(imageStoreDir(), RUNNER_IMAGE, copy.checkout);
    const dev = startMakeDev(copy.checkout, { TETHER_STATE_DIR: stateDir, TETHER_DEV_PORT: String(await freePort()) });
    const programs = new Set<string>();
    const watch = setInterval(() => {
      for (const pid of [
        ...claudeCodeUnder(stateDir),
        ...processesMentioning('runner-image/main.ts'),
        ...processesMentioning('runner-image/agent-host/main.ts'),
      ]) {
        const program = programOf(pid);
        if (program?.includes(copy.checkout) || program?.includes(image)) programs.add(program);
      }
    }, 100);
    try {
      await demoToPullRequest(dev, await chatUrlOf(dev));
    } finally {
      clearInterval(watch);
      dev.child.kill('SIGINT');
    }
    expect(await dev.exited).toBe(0);
    expect([...programs].filter((p) => p.includes(copy.checkout))).toEqual([]);
    expect(
      [...programs].some((p) =>
        p.startsWith(`${image}/bin/node --no-global-search-paths ${image}/app/runner-image/main.ts`),
      ),
    ).toBe(true);
    expect(
      [...programs].some((p) =>
        p.startsWith(`${image}/bin/node --disable-sigusr1 ${image}/app/runner-image/agent-host/main.ts`),
      ),
    ).toBe(true);
    expect(
      [...programs].some((p) => p.startsWith(`${image}/app/node_modules/@anthropic-ai/claude-agent-sdk-linux-`)),
    ).toBe(true);
  }, 240_000);
});
