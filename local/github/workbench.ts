// A GitHub stand-in over a real forge, for tests: the sample repository (acme/sample.git) in a
// fresh folder, served by the forge with the stand-in's authorize and push hooks, a webhook
// receiver when asked, and `push` — a commit pushed through the forge as any client would.
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { hostEnv } from '../config.ts';
import { basicAuth, serveGitOverHttp, type GitHttpForge } from '../git-forge.ts';
import { ensureSampleRepo } from '../sample-repo.ts';
import { startWebhookReceiver, type WebhookReceiver } from './receiver.ts';
import { startGitHubStandIn, type GitHubStandIn, type GitHubStandInOptions } from './stand-in.ts';

const run = promisify(execFile);

export interface PushOptions {
  /** Where the branch starts when the forge has no such branch yet (default main). */
  from?: string;
  /** The token to push with (default the workbench's own). */
  token?: string;
  /** The repository (default sample; another of `more`). */
  repo?: string;
  /** Files to delete in the same commit. */
  remove?: string[];
  message?: string;
}

export interface GitHubWorkbench {
  github: GitHubStandIn;
  forge: GitHttpForge;
  /** The fixed token (every right) the forge and the stand-in take. */
  token: string;
  /** The bare repository acme/sample.git. */
  bare: string;
  /** Its forge URL. */
  remoteUrl: string;
  receiver?: WebhookReceiver;
  /**
   * Commits `files` on `branch` and pushes it through the forge; returns the new commit. Throws with git's words when
   * refused.
   */
  push(branch: string, files: Record<string, string>, options?: PushOptions): Promise<string>;
  /** The commit a ref names in the bare repository. */
  sha(ref: string): Promise<string>;
  close(): Promise<void>;
}

export interface WorkbenchOptions extends GitHubStandInOptions {
  /** A webhook receiver with this secret, hooked to the stand-in. */
  webhookSecret?: string;
  /** More sample repositories beside acme/sample (acme/<name>.git). */
  more?: string[];
}

export async function startGitHubWorkbench(options: WorkbenchOptions = {}): Promise<GitHubWorkbench> {
  const dir = await mkdtemp(join(tmpdir(), 'tether-gh-'));
  const root = join(dir, 'remote');
  const bare = await ensureSampleRepo(root);
  for (const name of options.more ?? []) await ensureSampleRepo(root, name);
  const token = options.token ?? 'workbench-token';
  const receiver = options.webhookSecret ? await startWebhookReceiver(options.webhookSecret) : undefined;
  const github = await startGitHubStandIn({
    ...options,
    token,
    root,
    hooks: [...(options.hooks ?? []), ...(receiver ? [{ url: receiver.url, secret: receiver.secret }] : [])],
  });
  const forge = await serveGitOverHttp(root, token, { ...github.forgeHooks, record: true });
  const remoteUrl = `${forge.origin}/acme/sample.git`;
  const clones = new Map<string, Clone>();
  const cloneOf = async (repo: string) => {
    if (!clones.has(repo))
      clones.set(repo, await makeClone(join(dir, 'work', repo), `${forge.origin}/acme/${repo}.git`, token));
    return clones.get(repo)!;
  };
  return {
    github,
    forge,
    token,
    bare,
    remoteUrl,
    ...(receiver ? { receiver } : {}),
    push: async (branch, files, o = {}) => (await cloneOf(o.repo ?? 'sample')).push(branch, files, o),
    async sha(ref) {
      return (await run('git', ['--git-dir', bare, 'rev-parse', ref])).stdout.trim();
    },
    async close() {
      await Promise.all([github.close(), forge.close(), receiver?.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface Clone {
  push(branch: string, files: Record<string, string>, options: PushOptions): Promise<string>;
}

/** A work tree of the forge's repository at `url`, to commit and push from. */
async function makeClone(work: string, url: string, token: string): Promise<Clone> {
  const git = (args: string[], as = token) =>
    run('git', ['-C', work, '-c', `http.extraHeader=Authorization: ${basicAuth(as)}`, ...args], {
      env: { ...hostEnv(), GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
    });
  await mkdir(work, { recursive: true });
  await git(['init', '--quiet', '--initial-branch=main']);
  await git(['remote', 'add', 'origin', url]);
  return {
    async push(branch, files, o) {
      await git(['fetch', '--quiet', 'origin']);
      const there = (await git(['ls-remote', 'origin', `refs/heads/${branch}`])).stdout.trim();
      await git(['checkout', '--quiet', '-B', branch, `origin/${there ? branch : (o.from ?? 'main')}`]);
      for (const [path, content] of Object.entries(files)) {
        await mkdir(dirname(join(work, path)), { recursive: true });
        await writeFile(join(work, path), content);
      }
      for (const path of o.remove ?? []) await rm(join(work, path));
      await git(['add', '-A']);
      const who = ['-c', 'user.name=Test', '-c', 'user.email=test@localhost'];
      await git([...who, 'commit', '--quiet', '-m', o.message ?? 'change']);
      await git(['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`], o.token ?? token);
      return (await git(['rev-parse', 'HEAD'])).stdout.trim();
    },
  };
}
