// The stand-in's git: reads and writes a bare repository the forge serves, with no work tree
// (head and base shas, mergeability by `git merge-tree --write-tree`, merge commits, ref updates).
import { execFile } from 'node:child_process';
import { hostEnv } from '../config.ts';
import { ownerOf } from '../git-forge.ts';

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class BareRepo {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  run(args: string[], env: Record<string, string> = {}): Promise<GitResult> {
    return new Promise((resolve, reject) => {
      execFile(
        'git',
        ['-c', 'safe.directory=*', '--git-dir', this.path, ...args],
        {
          ...ownerOf(this.path),
          env: { PATH: hostEnv().PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', ...env },
          maxBuffer: 16 * 1024 * 1024,
        },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          if (code === -1) return reject(error!);
          resolve({ code, stdout: stdout.toString(), stderr: stderr.toString() });
        },
      );
    });
  }

  private async ok(args: string[], env?: Record<string, string>): Promise<string> {
    const result = await this.run(args, env);
    if (result.code !== 0) throw new Error(`git ${args[0]} failed in ${this.path}: ${result.stderr.trim()}`);
    return result.stdout.trim();
  }

  /** The commit a branch or sha names; undefined when there is none. */
  async commitOf(ref: string): Promise<string | undefined> {
    const name = /^[0-9a-f]{40}$/.test(ref) ? ref : `refs/heads/${ref}`;
    const result = await this.run(['rev-parse', '--verify', '--quiet', `${name}^{commit}`]);
    return result.code === 0 ? result.stdout.trim() : undefined;
  }

  async isAncestor(ancestor: string, of: string): Promise<boolean> {
    return (await this.run(['merge-base', '--is-ancestor', ancestor, of])).code === 0;
  }

  /** The merged tree of two commits, or undefined when they conflict. */
  async mergedTree(base: string, head: string): Promise<string | undefined> {
    const result = await this.run(['merge-tree', '--write-tree', '--no-messages', base, head]);
    if (result.code === 1) return undefined;
    if (result.code !== 0) throw new Error(`git merge-tree failed in ${this.path}: ${result.stderr.trim()}`);
    return result.stdout.split('\n')[0]!.trim();
  }

  /** A file's content at a commit; undefined when it has none there. */
  async fileAt(commit: string, path: string): Promise<string | undefined> {
    const result = await this.run(['show', `${commit}:${path}`]);
    return result.code === 0 ? result.stdout : undefined;
  }

  async commitTree(tree: string, parents: string[], message: string, who: { name: string; email: string }) {
    const env = {
      GIT_AUTHOR_NAME: who.name,
      GIT_AUTHOR_EMAIL: who.email,
      GIT_COMMITTER_NAME: who.name,
      GIT_COMMITTER_EMAIL: who.email,
    };
    return this.ok(['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', message], env);
  }

  /** Moves a branch from `from` to `to`; false when it was no longer at `from`. */
  async moveBranch(branch: string, to: string, from: string): Promise<boolean> {
    return (await this.run(['update-ref', `refs/heads/${branch}`, to, from])).code === 0;
  }

  /** Commits on head not on base, and the diff's size. */
  async stat(
    base: string,
    head: string,
  ): Promise<{ commits: number; additions: number; deletions: number; files: number }> {
    const count = Number(await this.ok(['rev-list', '--count', `${base}..${head}`]));
    const numstat = await this.ok(['diff', '--numstat', `${base}...${head}`]);
    let [additions, deletions, files] = [0, 0, 0];
    for (const line of numstat.split('\n').filter(Boolean)) {
      const [added, deleted] = line.split('\t');
      additions += Number(added) || 0;
      deletions += Number(deleted) || 0;
      files += 1;
    }
    return { commits: count, additions, deletions, files };
  }
}
