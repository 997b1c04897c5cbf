// The local node's image store (root only: it stages as root and probes as the containers' users):
// what is staged how, what a warm run leaves alone, and that no container user can change a staged
// file or folder — the runner image's included, probed as the agent's and the runner's uid.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AGENT_UID, RUNNER_UID } from '../../controller/runner-uids.ts';
import type { StagedImage } from '../../local/node-agent/image-store.ts';
import { stageFiles } from '../../local/node-agent/stage-files.ts';
import { stagedRunnerImage } from '../support/local-images.ts';

const asRoot = process.getuid?.() === 0;

/** A source folder with one file per case: root's 0644 and 0755 (linked), root's 0664 and uid 1000's (copied). */
function sources(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-stage-src-'));
  mkdirSync(join(dir, 'sub'));
  const file = (name: string, mode: number, uid = 0) => {
    writeFileSync(join(dir, name), `content of ${name}`);
    chmodSync(join(dir, name), mode);
    chownSync(join(dir, name), uid, uid);
    utimesSync(join(dir, name), 1_795_712_504.934781, 1_795_712_504.934781); // a time finer than milliseconds
  };
  file('plain', 0o644);
  file('sub/tool', 0o755);
  file('group-writable', 0o664);
  file('users', 0o644, RUNNER_UID);
  return dir;
}

function target(): { root: string; scratch: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tether-stage-dst-'));
  mkdirSync(join(dir, 'scratch'), { mode: 0o700 });
  return { root: join(dir, 'app'), scratch: join(dir, 'scratch') };
}

describe.runIf(asRoot)('staging files (root)', () => {
  const files = ['plain', 'sub/tool', 'group-writable', 'users'];

  it(`links what is already root's and read-only to others, copies \
the rest as root's, and keeps both on a warm run`, () => {
    const src = sources();
    const { root, scratch } = target();
    expect(stageFiles(src, files, root, scratch)).toEqual({ linked: 2, copied: 2, kept: 0, removed: 0 });
    expect(statSync(join(root, 'plain')).ino).toBe(statSync(join(src, 'plain')).ino);
    expect(statSync(join(root, 'users')).ino).not.toBe(statSync(join(src, 'users')).ino);
    for (const [file, mode] of [
      ['plain', 0o644],
      ['sub/tool', 0o755],
      ['group-writable', 0o644],
      ['users', 0o644],
    ] as const) {
      expect(statSync(join(root, file))).toMatchObject({ uid: 0, gid: 0, mode: 0o100000 | mode });
      expect(readFileSync(join(root, file), 'utf8')).toBe(`content of ${file}`);
    }
    expect(statSync(join(root, 'sub')).mode & 0o7777).toBe(0o755);
    expect(stageFiles(src, files, root, scratch)).toEqual({ linked: 0, copied: 0, kept: 4, removed: 0 });
  });

  it(`restages a changed file, a source that is no longer \
safe to link, and removes what the image no longer has`, () => {
    const src = sources();
    const { root, scratch } = target();
    stageFiles(src, files, root, scratch);
    writeFileSync(join(src, 'users'), 'changed, and longer');
    utimesSync(join(src, 'group-writable'), new Date(), new Date(Date.now() + 5000));
    chmodSync(join(src, 'plain'), 0o666); // the staged link shares this mode until restaged
    writeFileSync(join(root, 'planted'), 'not in the image');
    expect(
      stageFiles(
        src,
        files.filter((f) => f !== 'sub/tool'),
        root,
        scratch,
      ),
    ).toEqual({ linked: 0, copied: 3, kept: 0, removed: 2 });
    expect(readFileSync(join(root, 'users'), 'utf8')).toBe('changed, and longer');
    expect(statSync(join(root, 'plain')).mode & 0o7777).toBe(0o644);
    expect(existsSync(join(root, 'planted'))).toBe(false);
    expect(existsSync(join(root, 'sub'))).toBe(false);
  });
});

/** What `uid` can do to everything under `dirs`: the paths it could write, and those it could not read. */
function probeAs(
  uid: number,
  node: string,
  dirs: string[],
): { checked: number; writable: string[]; unreadable: string[] } {
  const script = `
    import { accessSync, constants, readdirSync, statSync } from 'node:fs';
    import { join } from 'node:path';
    const report = { checked: 0, writable: [], unreadable: [] };
    const can = (path, mode) => { try { accessSync(path, mode); return true; } catch { return false; } };
    const walk = (path) => {
      report.checked++;
      const dir = statSync(path).isDirectory();
      if (can(path, constants.W_OK)) report.writable.push(path);
      if (!can(path, dir ? constants.R_OK | constants.X_OK : constants.R_OK)) report.unreadable.push(path);
      else if (dir) for (const name of readdirSync(path)) walk(join(path, name));
    };
    for (const dir of JSON.parse(process.argv[1])) walk(dir);
    console.log(JSON.stringify(report));`;
  const run = spawnSync(
    'setpriv',
    [
      `--reuid=${uid}`,
      `--regid=${RUNNER_UID}`,
      '--clear-groups',
      node,
      '--input-type=module',
      '-e',
      script,
      JSON.stringify(dirs),
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`the probe as uid ${uid} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { checked: number; writable: string[]; unreadable: string[] };
}

describe.runIf(asRoot)('the staged runner image (root)', () => {
  let image: StagedImage;
  beforeAll(async () => {
    image = await stagedRunnerImage();
  }, 60_000);

  it.each([
    ['agent', AGENT_UID],
    ['runner', RUNNER_UID],
  ])("can be read, but not changed, by the %s's uid", (_who, uid) => {
    const probe = probeAs(uid, image.node, [dirname(image.app)]);
    expect(probe.checked).toBeGreaterThan(5000);
    // Its own compile cache is the only thing a user may write, and no other user may read it.
    const own = join(image.compileCache, String(uid));
    expect(probe.writable.filter((p) => p !== own && !p.startsWith(`${own}/`))).toEqual([]);
    expect(probe.unreadable.filter((p) => !p.startsWith(image.compileCache) && !p.endsWith('/scratch'))).toEqual([]);
    expect(probe.unreadable).toContain(join(image.compileCache, String(uid === AGENT_UID ? RUNNER_UID : AGENT_UID)));
  });
});
