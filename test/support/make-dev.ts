// `make dev` (node local/dev.ts) as a child process, and its web chat: what a newcomer sees and does.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from './eventually.ts';

/** Process ids whose command line mentions `text` (read from /proc; no procps needed). */
export function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

/** Claude Code processes (the Agent SDK's binary) working somewhere under `dir`. */
export function claudeCodeUnder(dir: string): number[] {
  return processesMentioning('claude-agent-sdk-linux').filter((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(dir);
    } catch {
      return false;
    }
  });
}

export interface MakeDev {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** `node local/dev.ts` in `checkout`, with the test's environment over this process's. */
export function startMakeDev(checkout: string, env: Record<string, string>): MakeDev {
  const child = spawn(process.execPath, [join(checkout, 'local/dev.ts')], {
    cwd: checkout,
    env: { ...process.env, ANTHROPIC_API_KEY: '', GITHUB_API_URL: '', TETHER_REPO_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, output: () => output, exited };
}

/** The chat URL `make dev` prints once it is running (an error at once if it exits first). */
export const chatUrlOf = (dev: MakeDev): Promise<string> =>
  Promise.race([
    eventually(
      () => {
        const match = /Chat:\s+(http:\/\/\S+\/chat\?token=[0-9a-f]+)/.exec(dev.output());
        if (!match) throw new Error(`no chat URL yet:\n${dev.output()}`);
        return match[1]!;
      },
      90_000,
      200,
    ),
    dev.exited.then((code) =>
      Promise.reject(new Error(`make dev exited (${code}) before printing the chat URL:\n${dev.output()}`)),
    ),
  ]);

export interface Chat {
  cookie: string;
  send(id: string, text: string): Promise<Response>;
}

/** Trades the chat URL's token for the chat's cookie. */
export async function openChat(chatUrl: string): Promise<Chat> {
  const exchange = await fetch(chatUrl, { redirect: 'manual' });
  if (exchange.status !== 303) throw new Error(`the chat link answered ${exchange.status}`);
  const cookie = exchange.headers.get('set-cookie')!.split(';')[0]!;
  const send = (id: string, text: string) =>
    fetch(new URL('/chat/send', chatUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({ id, text }),
    });
  return { cookie, send };
}

/** Resolves once the chat's event stream has shown a message matching `pattern` (within a minute). */
export async function chatShows(chatUrl: string, cookie: string, pattern: RegExp): Promise<void> {
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

/** The scripted model's demo through the chat: a command, its review (then `reviewed`), approve, the pull request. */
export async function demoToPullRequest(dev: MakeDev, chatUrl: string, reviewed?: () => void): Promise<void> {
  const chat = await openChat(chatUrl);
  if ((await chat.send('dev-test-0001', 'add a farewell function')).status !== 202)
    throw new Error('the chat refused the command');
  await eventually(
    () => {
      if (!/to=AwaitingApproval/.test(dev.output()))
        throw new Error(`the Session is not awaiting approval:\n${dev.output()}`);
    },
    60_000,
    200,
  );
  reviewed?.();
  await chatShows(chatUrl, chat.cookie, /Reply \*approve\* to open a pull request/); // the relay has seen the request
  if ((await chat.send('dev-test-0002', 'approve')).status !== 202) throw new Error('the chat refused the approval');
  await eventually(
    () => {
      if (!/to=Succeeded reason=Published/.test(dev.output()))
        throw new Error(`the Session has not published:\n${dev.output()}`);
    },
    60_000,
    200,
  );
}
