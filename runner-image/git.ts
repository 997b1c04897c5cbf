// Git in the workspace: clone or refresh, diff (without touching the index), revert, publish.
// The push token travels in GIT_CONFIG_* environment variables, never on a command line or in a URL.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from '../common/session/schema.ts';
import type { Redactor } from '../common/log.ts';

export interface GitDeps {
  repoDir: string;
  token?: string;
  author: { name: string; email: string };
  redact: Redactor;
  env: Record<string, string>;
}

export interface Diff {
  stat: string;
  diff: string;
  truncated: boolean;
  files: number;
}

export const TRUNCATION_MARKER = '\n… diff truncated by Tether; the full diff is in the pull request …\n';

export class Git {
  private readonly deps: GitDeps;

  constructor(deps: GitDeps) {
    this.deps = deps;
  }

  private env(extra: Record<string, string> = {}): Record<string, string> {
    const env: Record<string, string> = {
      ...this.deps.env, ...extra, GIT_TERMINAL_PROMPT: '0',
      GIT_AUTHOR_NAME: this.deps.author.name, GIT_AUTHOR_EMAIL: this.deps.author.email,
      GIT_COMMITTER_NAME: this.deps.author.name, GIT_COMMITTER_EMAIL: this.deps.author.email,
    };
    if (this.deps.token) {
      const basic = Buffer.from(`x-access-token:${this.deps.token}`).toString('base64');
      Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}` });
    }
    return env;
  }

  run(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile('git', args, { cwd: options.cwd ?? this.deps.repoDir, env: this.env(options.env), maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error) reject(new Error(this.deps.redact(`git ${args[0]} failed: ${stderr.trim() || error.message}`)));
        else resolve(stdout);
      });
    });
  }

  /** First use: clone. Later: fetch and check out the base branch, unless earlier changes are kept. */
  async prepare(url: string, base: string): Promise<'cloned' | 'updated' | 'kept-changes'> {
    if (!existsSync(join(this.deps.repoDir, '.git'))) {
      await mkdir(this.deps.repoDir, { recursive: true });
      await this.run(['clone', '--branch', base, '--', url, '.']);
      return 'cloned';
    }
    await this.run(['remote', 'set-url', 'origin', url]);
    await this.run(['fetch', '--prune', 'origin', base]);
    if (await this.isDirty()) return 'kept-changes';
    await this.run(['checkout', '-B', base, `origin/${base}`]);
    return 'updated';
  }

  async isDirty(): Promise<boolean> {
    return (await this.run(['status', '--porcelain', '--untracked-files=all'])).trim() !== '';
  }

  /** Stat and unified diff of the working tree against HEAD, new files included, index untouched. */
  async diff(maxChars: number = LIMITS.diffChars): Promise<Diff> {
    const dir = await mkdtemp(join(tmpdir(), 'tether-index-'));
    try {
      const env = { GIT_INDEX_FILE: join(dir, 'index') };
      await this.run(['read-tree', 'HEAD'], { env });
      await this.run(['add', '-A'], { env });
      const stat = await this.run(['diff', '--cached', '--stat=72', 'HEAD'], { env });
      const full = this.deps.redact(await this.run(['diff', '--cached', 'HEAD'], { env }));
      const files = (await this.run(['diff', '--cached', '--name-only', 'HEAD'], { env })).split('\n').filter(Boolean).length;
      const truncated = full.length > maxChars;
      const diff = truncated ? full.slice(0, maxChars - TRUNCATION_MARKER.length) + TRUNCATION_MARKER : full;
      return { stat: this.deps.redact(stat.trimEnd()), diff, truncated, files };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Reject: git checkout . && git clean -fd (unstaging first, so staged edits go too). */
  async revert(): Promise<void> {
    await this.run(['reset', '--quiet']);
    await this.run(['checkout', '--', '.']);
    await this.run(['clean', '-fd']);
  }

  /** Branch, commit everything, push. Returns the commit sha. */
  async publish(branch: string, message: string, base: string): Promise<string> {
    await this.run(['checkout', '-B', branch]);
    await this.run(['add', '-A']);
    await this.commitWithMessage(message);
    const sha = (await this.run(['rev-parse', 'HEAD'])).trim();
    await this.run(['push', '--force-with-lease', 'origin', `${branch}:refs/heads/${branch}`]);
    await this.run(['checkout', '--quiet', base]);
    return sha;
  }

  private async commitWithMessage(message: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'tether-msg-'));
    try {
      const file = join(dir, 'msg');
      await writeFile(file, message);
      return await this.run(['commit', '--quiet', '--no-verify', '-F', file]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async remoteUrl(): Promise<string> {
    return (await this.run(['remote', 'get-url', 'origin'])).trim();
  }
}

/** "make the navbar sticky" → "Tether: make the navbar sticky" (first line, ≤ 72 chars) + the prompt. */
export function commitMessage(prompt: string, session: string): string {
  const text = prompt.replace(/^script:\s*/, '').trim();
  const first = (text.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim() || 'changes from Tether';
  const subject = first.length > 64 ? `${first.slice(0, 63)}…` : first;
  return `${subject}\n\nRequested from the phone through Tether (session ${session}).\n\n${text.slice(0, 2000)}\n`;
}
