// The snapshot of a checkout of ~10,000 files / ~100 MB, unchanged and with 100 files changed: the
// old way (`git add -A` of the work tree into a copy of a refreshed base index, then `write-tree`)
// against the runner's walk through workspace-fs (runner-image/workspace/snapshot.ts); and the first checkout into an
// empty folder, `git read-tree -u` against runner-image/workspace/checkout.ts (a whole prepare once the store holds the
// objects). Prints the median and the slowest of --runs runs of each, and the machine's load. Not
// part of `make bench`.
// Run: node bench/snapshot.ts [--files 10000] [--runs 5]
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Git } from '../runner-image/git/store.ts';
import { inheritedEnv } from './config.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';

const { values: args } = parseArgs({
  options: { files: { type: 'string', default: '10000' }, runs: { type: 'string', default: '5' } },
});
const FILES = Number(args.files);
const RUNS = Number(args.runs);
const FILE_BYTES = 10 * 1024;
const CHANGED = 100;
refuseIfBusy();

const root = mkdtempSync(join(tmpdir(), 'tether-bench-snapshot-'));
const env = {
  PATH: inheritedEnv().PATH,
  HOME: root,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@b',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@b',
};
const git = (cwd: string, args: string[], extra: Record<string, string> = {}) =>
  execFileSync('git', args, { cwd, env: { ...env, ...extra }, encoding: 'utf8', maxBuffer: 1 << 28 });
const pathOf = (i: number) => `src/d${Math.floor(i / 100)}/f${i}.txt`;

/** A remote whose main holds FILES files of FILE_BYTES (hex text, 100 to a folder). */
function remote(): string {
  const seed = join(root, 'seed');
  for (let i = 0; i < FILES; i++) {
    mkdirSync(join(seed, 'src', `d${Math.floor(i / 100)}`), { recursive: true });
    writeFileSync(join(seed, pathOf(i)), randomBytes(FILE_BYTES / 2).toString('hex'));
  }
  git(seed, ['init', '--quiet', '--initial-branch=main']);
  git(seed, ['add', '-A']);
  git(seed, ['commit', '--quiet', '-m', 'base']);
  git(root, ['clone', '--quiet', '--bare', seed, join(root, 'remote.git')]);
  rmSync(seed, { recursive: true });
  return join(root, 'remote.git');
}

async function timed(run: () => unknown): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = process.hrtime.bigint();
    await run();
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return times;
}

const url = remote();
const storeDir = join(root, 'store');
let workspaces = 0;
/** The runner's git on a fresh workspace (the store is shared: after the first, nothing new is fetched). */
const fresh = () => {
  const workspace = join(root, `workspace-${++workspaces}`);
  mkdirSync(workspace);
  return {
    workspace,
    runner: new Git({
      workspace,
      checkout: 'repo',
      storeDir,
      author: { name: 'b', email: 'b@b' },
      redact: (s) => s,
      path: inheritedEnv().PATH!,
    }),
  };
};
const { workspace, runner } = fresh();
await runner.prepare(url, 'main');

// The old way, as runner-image/git/store.ts did it: a base index refreshed once, copied for every snapshot.
const repo = join(workspace, 'repo');
const old = { GIT_DIR: join(storeDir, 'store.git'), GIT_WORK_TREE: repo };
const baseIndex = join(root, 'base.index');
git(repo, ['read-tree', 'main'], { ...old, GIT_INDEX_FILE: baseIndex });
git(repo, ['update-index', '-q', '--refresh'], { ...old, GIT_INDEX_FILE: baseIndex });
const oldWay = () => {
  const index = join(root, 'old.index');
  copyFileSync(baseIndex, index);
  git(repo, ['add', '-A'], { ...old, GIT_INDEX_FILE: index });
  return git(repo, ['write-tree'], { ...old, GIT_INDEX_FILE: index }).trim();
};

const rows: Array<[string, number[]]> = [];
rows.push([
  'first checkout: git read-tree -u',
  await timed(() => {
    const into = mkdtempSync(join(root, 'read-tree-'));
    git(into, ['read-tree', '--reset', '-u', 'main'], {
      ...old,
      GIT_WORK_TREE: into,
      GIT_INDEX_FILE: join(into, '.index'),
    });
  }),
]);
rows.push(['first checkout: prepare through workspace-fs', await timed(() => fresh().runner.prepare(url, 'main'))]);
rows.push(['unchanged: git add -A + write-tree', await timed(oldWay)]);
rows.push(['unchanged: walk through workspace-fs', await timed(() => runner.changes())]);
for (let i = 0; i < CHANGED; i++)
  writeFileSync(join(repo, pathOf(i * Math.floor(FILES / CHANGED))), randomBytes(FILE_BYTES / 2).toString('hex'));
rows.push([`${CHANGED} changed: git add -A + write-tree`, await timed(oldWay)]);
rows.push([`${CHANGED} changed: walk through workspace-fs`, await timed(() => runner.changes())]);
const [oldTree, newTree] = [oldWay(), (await runner.changes())!.tree];
if (oldTree !== newTree) throw new Error(`the two ways disagree: ${oldTree} ≠ ${newTree}`);

console.log(`checkout of ${FILES} files, ${Math.round((FILES * FILE_BYTES) / 1024 ** 2)} MB; ${RUNS} runs each`);
for (const [figure, times] of rows)
  console.log(`${figure.padEnd(42)} median ${percentile(times, 50)} ms, slowest ${percentile(times, 100)} ms`);
console.log(`load: ${machineLoad()}`);
rmSync(root, { recursive: true, force: true });
