// `make dev` as a newcomer runs it, with a second local repository in TETHER_REPOS: the script
// prints the chat URL, a command sent through the web chat on each repository is worked on by the
// real Claude Code (the scripted model's demo) and comes back as a "pull request" pushed to that
// repository's remote, and Ctrl-C (SIGINT) leaves nothing running.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { ensureSampleRepo, sampleRepoPath } from '../../local/sample-repo.ts';
import { eventually } from '../support/eventually.ts';

/** Process ids whose command line mentions `text` (read from /proc; no procps needed). */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
    } catch {
      return false;
    }
  }).map(Number).filter((pid) => pid !== process.pid);
}

/** Claude Code processes (the Agent SDK's binary) working somewhere under `dir`. */
function claudeCodeUnder(dir: string): number[] {
  return processesMentioning('claude-agent-sdk-linux').filter((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(dir);
    } catch {
      return false;
    }
  });
}

/** The local IPv4 addresses listening on a TCP port (from /proc/net/tcp; state 0A = LISTEN). */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A')
    .map((fields) => fields[1]!.split(':')[0]!.match(/../g)!.reverse().map((byte) => parseInt(byte, 16)).join('.'));
}

/** The branches Tether pushed to a local remote (read as another uid may own it). */
const tetherBranches = (remote: string) => execFileSync('git', ['-c', `safe.directory=${remote}`, '-C', remote, 'branch', '--list', 'tether/*'], { encoding: 'utf8' })
  .split('\n').map((b) => b.trim()).filter(Boolean);
const count = (text: string, pattern: RegExp) => [...text.matchAll(new RegExp(pattern, 'g'))].length;

describe('make dev', () => {
  it('prints the chat URL, turns a chat command on each of two local repositories into a pull request, and stops cleanly on Ctrl-C', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tether-dev-'));
    const widgetsDir = mkdtempSync(join(tmpdir(), 'tether-widgets-'));
    chmodSync(widgetsDir, 0o755); // the runner runs as its own user
    const widgets = await ensureSampleRepo(widgetsDir);
    const port = await freePort();
    const dev = spawn(process.execPath, ['local/dev.ts'], {
      env: {
        ...process.env, TETHER_STATE_DIR: stateDir, TETHER_DEV_PORT: String(port), ANTHROPIC_API_KEY: '', GITHUB_API_URL: '', TETHER_REPO_URL: '',
        TETHER_REPOS: JSON.stringify([{ name: 'widgets', url: widgets }]),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    dev.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    dev.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const chatUrl = await eventually(() => {
        const match = /Chat:\s+(http:\/\/\S+\/chat\?token=[0-9a-f]+)/.exec(output);
        if (!match) throw new Error(`no chat URL yet:\n${output}`);
        return match[1]!;
      }, 90_000, 200);
      expect(output).toMatch(/kubectl get sessions -n tether/);
      expect(output).toMatch(/Agent:\s+Claude Code with the scripted model/);
      expect(listeningAddresses(port)).toEqual(['127.0.0.1']); // the relay is not on the network
      const exchange = await fetch(chatUrl, { redirect: 'manual' });
      expect(exchange.status).toBe(303);
      const cookie = exchange.headers.get('set-cookie')!.split(';')[0]!;
      expect((await fetch(new URL('/chat', chatUrl), { headers: { cookie } })).status).toBe(200);
      expect((await fetch(chatUrl.replace(/token=\w+/, 'token=wrong'), { redirect: 'manual' })).status).toBe(401);

      const send = (id: string, text: string) => fetch(new URL('/chat/send', chatUrl), {
        method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ id, text }),
      });
      const seen = new Set<number>();
      const watch = setInterval(() => claudeCodeUnder(stateDir).forEach((pid) => seen.add(pid)), 100);
      expect((await send('dev-test-0001', 'add a farewell function')).status).toBe(202);
      await eventually(() => expect(output).toMatch(/to=AwaitingApproval/), 60_000, 200);
      clearInterval(watch);
      expect(seen.size, 'the real Claude Code worked on the command').toBeGreaterThan(0);
      expect(output).toMatch(/runner ready .*agent=claude \(scripted model at http:\/\/127\.0\.0\.1:\d+\)/);
      await chatShows(chatUrl, cookie, /Reply \*approve\* to open a pull request/); // the relay has seen the request
      expect((await send('dev-test-0002', 'approve')).status).toBe(202);
      await eventually(() => expect(output).toMatch(/to=Succeeded reason=Published/), 60_000, 200);
      expect(tetherBranches(sampleRepoPath(join(stateDir, 'remote')))).toHaveLength(1);

      // The second repository: the controller's host list holds it too, so the command runs there.
      expect((await send('dev-test-0003', '@widgets add a farewell function')).status).toBe(202);
      await chatShows(chatUrl, cookie, /On it \(session [0-9a-f]{4}\) in \*widgets\*/);
      await eventually(() => expect(count(output, /to=AwaitingApproval/)).toBe(2), 60_000, 200);
      expect(output).not.toMatch(/could not be started|not on this install's list/);
      expect((await send('dev-test-0004', 'approve')).status).toBe(202);
      await eventually(() => expect(count(output, /to=Succeeded reason=Published/)).toBe(2), 60_000, 200);
      expect(tetherBranches(widgets)).toHaveLength(1);
    } finally {
      dev.kill('SIGINT');
    }
    const code = await new Promise<number | null>((resolve) => dev.once('exit', resolve));
    expect(code).toBe(0);
    await eventually(() => expect(processesMentioning(stateDir)).toEqual([]), 15_000, 200);
    await eventually(async () => expect(await fetch(`http://127.0.0.1:${port}/healthz`).then(() => 'up', () => 'down')).toBe('down'));
  }, 240_000);
});

/** Resolves once the chat's event stream has shown a message matching `pattern` (within a minute). */
async function chatShows(chatUrl: string, cookie: string, pattern: RegExp): Promise<void> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`the chat never showed ${pattern}`)), 60_000);
  try {
    const response = await fetch(new URL('/chat/events', chatUrl), { headers: { cookie }, signal: abort.signal });
    const reader = response.body!.getReader();
    let seen = '';
    while (!pattern.test(seen)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the chat's event stream ended before ${pattern}:\n${seen}`);
      seen += Buffer.from(value).toString('utf8');
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}
