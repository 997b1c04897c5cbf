// One git process in the runner's private folder, with the locked environment of env.ts: the token,
// read at that moment, only for a command that talks to the forge; stderr kept (its last 8 KiB)
// and redacted into the error.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Redactor } from '../../common/log.ts';
import { gitEnvironment, type GitIdentity, type TokenSource } from './env.ts';

export interface RunOptions {
  index?: string;
  /** The repository; the private store unless given, none (clone, init) with null. */
  gitDir?: string | null;
  /** This command talks to the forge at this URL: the token goes with it. */
  forge?: string;
  input?: string;
}

export interface SpawnOptions extends RunOptions {
  /** PATH to find git. */
  path: string;
  /** The runner's private folder: git's working folder and (below it) HOME. */
  storeDir: string;
  author: GitIdentity;
  /** Called only for a command that talks to the forge, so each such command has the current token. */
  token?: TokenSource;
  redact: Redactor;
  proxy?: Readonly<Record<string, string>>;
}

export interface RunningGit {
  stdin: Writable;
  stdout: Readable;
  /** Settles when git exits: rejects with its redacted stderr unless the exit code is 0. */
  done: Promise<void>;
}

export function spawnGit(args: string[], options: SpawnOptions): RunningGit {
  const env = gitEnvironment({
    path: options.path,
    home: join(options.storeDir, 'home'),
    author: options.author,
    proxy: options.proxy,
    ...(options.forge ? { forge: { url: options.forge, token: options.token?.() } } : {}),
  });
  if (options.gitDir) env.GIT_DIR = options.gitDir;
  if (options.index) env.GIT_INDEX_FILE = options.index;
  const child = spawn('git', args, { cwd: options.storeDir, env });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8192)));
  // git's exit status tells whether it read its input; a closed pipe adds nothing to that.
  child.stdin.on('error', () => undefined);
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      reject(new Error(options.redact(`git ${args[0]} failed: ${stderr.trim() || `exit ${code ?? signal}`}`)));
    });
  });
  return { stdin: child.stdin, stdout: child.stdout, done };
}
