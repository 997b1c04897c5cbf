// The pull-request loop's end-to-end helpers: what the bare repository's branches hold, a push by
// someone else through the forge, and the phone's conversation both ways (what it sent and received).
import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { basicAuth } from '../../local/git-forge.ts';
import type { FakeMessage } from '../fakes/twilio.ts';
import type { Phone } from './e2e.ts';

/** git in the bare repository `bare` (the stack's user owns it). */
export const bareGit = (bare: string, ...args: string[]) =>
  execFileSync('git', ['-c', `safe.directory=${bare}`, '-C', bare, ...args], { encoding: 'utf8' }).trim();

/** The commits of `branch` not on `base`, oldest first. */
export const commitsOn = (bare: string, branch: string, base = 'main') =>
  bareGit(bare, 'rev-list', '--reverse', `${base}..refs/heads/${branch}`).split('\n').filter(Boolean);

export const tipOf = (bare: string, ref: string) => bareGit(bare, 'rev-parse', `refs/heads/${ref}`);

export const fileAt = (bare: string, ref: string, path: string) => bareGit(bare, 'show', `${ref}:${path}`);

/** The full message of one commit. */
export const messageOf = (bare: string, commit: string) => bareGit(bare, 'log', '-1', '--format=%B', commit);

/** The first parent of `commit`. */
export const parentOf = (bare: string, commit: string) => bareGit(bare, 'rev-parse', `${commit}^`);

const run = promisify(execFile);

/**
 * Someone else's commit on `branch`, pushed through the forge at `remoteUrl` with `token` as a
 * teammate would (a clone, a commit of `files`, a fast-forward push). Returns the new tip.
 * Asynchronous: the forge answers from the test's own process.
 */
export async function pushAsSomeoneElse(
  remoteUrl: string,
  token: string,
  branch: string,
  files: Record<string, string>,
  message: string,
): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'tether-teammate-'));
  const git = async (...args: string[]) =>
    (
      await run(
        'git',
        [
          '-c',
          `http.extraHeader=Authorization: ${basicAuth(token)}`,
          '-c',
          'user.name=Teammate',
          '-c',
          'user.email=teammate@example.com',
          ...args,
        ],
        { cwd: work, encoding: 'utf8', env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } },
      )
    ).stdout.trim();
  try {
    await git('clone', '--quiet', '--branch', branch, remoteUrl, '.');
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(work, path)), { recursive: true });
      await writeFile(join(work, path), content);
    }
    await git('add', '-A');
    await git('commit', '--quiet', '-m', message);
    await git('push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`);
    return await git('rev-parse', 'HEAD');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export interface Conversation {
  phone: Phone;
  /** Sends as the phone does, and keeps it for the transcript. */
  send(text: string): Promise<void>;
  /** Taps the button titled `title` (in any case), and keeps it for the transcript. */
  tap(message: FakeMessage, title: string): Promise<void>;
  /** Both sides in order: "phone > …" and "bot > …". */
  transcript(): string[];
}

/** A phone whose words are kept beside what it received, for a transcript in order. */
export function conversation(phone: Phone): Conversation {
  const sent: Array<{ at: number; line: string }> = [];
  return {
    phone,
    async send(text) {
      sent.push({ at: Date.now(), line: `phone > ${text.replace(/\n/g, '\\n')}` });
      await phone.send(text);
    },
    async tap(message, title) {
      const shown = message.buttons?.find((b) => b.title.toLowerCase() === title.toLowerCase())?.title ?? title;
      sent.push({ at: Date.now(), line: `phone > [tap: ${shown}]` });
      await phone.tap(message, shown);
    },
    transcript() {
      const got = phone.received().map((m) => ({
        at: m.at,
        line:
          `bot > ${m.body}${m.mediaUrls.length ? ' [picture]' : ''}` +
          (m.buttons ? ` [${m.buttons.map((b) => b.title).join(' | ')}]` : ''),
      }));
      return [...sent, ...got].sort((a, b) => a.at - b.at).map((e) => e.line);
    },
  };
}

/** The titles of a message's buttons, in lower case (their case is the words' choice, not the test's). */
export const buttonTitles = (message: FakeMessage) => message.buttons?.map((b) => b.title.toLowerCase());
