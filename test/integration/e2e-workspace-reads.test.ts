// End to end, as an attacker holding the repository and the agent, against the supervisor's own
// reads and writes on the workspace (it holds the tokens; the agent must not borrow its rights):
// a repository that commits CLAUDE.md -> /proc/self/environ; an agent that leaves a FIFO, a link to
// /dev/zero and a 2 GB sparse file as CLAUDE.md for the next command; an agent that puts symlinks
// at every picture name the runner would use next, into the private git store and onto a canary
// file. No canary reaches the model, the workspace (transcripts included), the Session, the phone
// or the logs; every next command runs; the store and the canary file are untouched and the
// pictures still reach the phone.
import { CoreV1Api } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devServerLines } from '../support/dev-server.ts';
import { agentFolder, startE2E, type E2E, type Phone } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const GITHUB_CANARY = 'ghp_canaryWORKSPACEreads0123456789abc';
const ANTHROPIC_CANARY = 'sk-ant-canary-WORKSPACE-reads-0123456789';
const LEFT_OUT = "The repository's CLAUDE.md was left out";
const model = useScriptedModel();
let e2e: E2E;
/** The port of the page the agent serves on its Pod's loopback (any: the Pod's loopback is its own). */
const PAGE_PORT = 8080;
const pageUrl = `http://127.0.0.1:${PAGE_PORT}/`;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });

/** A bare repository at `bare` whose one commit `build` makes in a work tree beside it. */
function hostileRepo(name: string, build: (work: string) => void): { name: string; make(bare: string): void } {
  return {
    name,
    make(bare) {
      mkdirSync(bare, { recursive: true });
      git(bare, 'init', '--quiet', '--bare', '--initial-branch=main');
      const work = mkdtempSync(join(tmpdir(), `tether-${name}-`));
      git(work, 'init', '--quiet', '--initial-branch=main');
      writeFileSync(join(work, 'README.md'), `# ${name}\n`);
      build(work);
      git(work, 'add', '-A');
      git(work, 'commit', '--quiet', '-m', name);
      git(work, 'push', '--quiet', bare, 'main');
    },
  };
}

beforeAll(async () => {
  const environ = hostileRepo('environ', (work) =>
    execFileSync('ln', ['-s', '/proc/self/environ', join(work, 'CLAUDE.md')]),
  );
  const planted = hostileRepo('planted', (work) => writeFileSync(join(work, '.gitignore'), '/CLAUDE.md\n'));
  e2e = await startE2E({
    numbers: ['+14155550141', '+14155550142', '+14155550143'],
    runnerSecrets: { GITHUB_TOKEN: GITHUB_CANARY, ANTHROPIC_API_KEY: ANTHROPIC_CANARY },
    podEnv: model.env(),
    moreRepos: [environ, planted], // served on the stack's forge
  });
}, 90_000);
afterAll(async () => {
  await e2e?.stop();
});

/** Every regular file under dir (symlinks not followed), as text. */
function filesUnder(dir: string): Array<[string, string]> {
  return readdirSync(dir).flatMap((name): Array<[string, string]> => {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory()) return filesUnder(path);
    return stat.isFile() && stat.size < 64 * 1024 * 1024 ? [[path, readFileSync(path, 'latin1')]] : [];
  });
}

const said = (phone: Phone) =>
  phone
    .received()
    .map((m) => m.body)
    .join('\n');
const mine = async (phone: Phone) => (await e2e.list()).filter((s) => s.spec.phone === phone.number);

/** A Bash step the phone allows, then the summary the command ends with. */
async function allowedRun(phone: Phone, repo: string, command: string, summary: string): Promise<void> {
  await phone.send(`${repo}script:\ntool: Bash ${JSON.stringify({ command })}\nsay: ${summary}`);
  await phone.next(/🔐/);
  await phone.send('allow');
  await phone.next(new RegExp(summary));
}

describe('end to end: the supervisor reads and writes nothing the agent points it at', () => {
  it(
    'CLAUDE.md -> /proc/self/environ: left out, said on the phone; no canary reaches the model, the workspace, the ' +
      'Session, the phone or the logs',
    { timeout: 120_000 },
    async () => {
      const phone = e2e.phone('+14155550141');
      await phone.send('@environ script:\nsay: read the instructions');
      await phone.next(/read the instructions/);
      const [session] = await mine(phone);
      expect(session!.status?.phase).toBe('Succeeded');

      // Every request the model got so far, and the workspace, transcripts included.
      const requests = model.model.requests.map((r, i): [string, string] => [
        `model request ${i}`,
        JSON.stringify(r.body ?? null),
      ]);
      expect(requests.some(([, body]) => body.includes('read the instructions'))).toBe(true);
      const workspace = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, session!.spec.workspace);
      expect(filesUnder(join(workspace, 'home')).some(([path]) => path.endsWith('.jsonl'))).toBe(true);
      const agentSide = [...requests, ...filesUnder(workspace)];
      const places = [
        ...agentSide,
        ['Session', JSON.stringify(session)],
        ['phone', JSON.stringify(phone.received())],
        ['logs', e2e.logs().join('\n')],
      ];
      for (const canary of [GITHUB_CANARY, ANTHROPIC_CANARY]) {
        expect(
          places.filter(([, text]) => text!.includes(canary)).map(([where]) => where),
          canary,
        ).toEqual([]);
      }
      // Nor any other line of the runner's environment (a name only it has).
      expect(
        agentSide.filter(([, text]) => text.includes('TETHER_SESSION_NAMESPACE=')).map(([where]) => where),
      ).toEqual([]);
      expect(said(phone)).toContain(`${LEFT_OUT} (a symlink leading out of the checkout)`);
    },
  );

  it(
    'a FIFO, a link to /dev/zero and a 2 GB sparse file left as CLAUDE.md: each next command runs, saying why it ' +
      'was left out',
    { timeout: 240_000 },
    async () => {
      const phone = e2e.phone('+14155550142');
      await allowedRun(phone, '@planted ', 'mkfifo CLAUDE.md', 'planted a fifo');
      await allowedRun(phone, '@planted ', 'rm CLAUDE.md && ln -s /dev/zero CLAUDE.md', 'planted a zero link');
      expect(said(phone)).toContain(`${LEFT_OUT} (not a regular file)`);
      await allowedRun(phone, '@planted ', 'rm CLAUDE.md && truncate -s 2G CLAUDE.md', 'planted a sparse file');
      expect(said(phone)).toContain(`${LEFT_OUT} (a symlink leading out of the checkout)`);
      await phone.send('@planted script:\nsay: after the sparse file');
      await phone.next(/after the sparse file/);
      expect(said(phone)).toContain(`${LEFT_OUT} (larger than 1048576 bytes)`);
      expect((await mine(phone)).map((s) => s.status?.phase)).toEqual([
        'Succeeded',
        'Succeeded',
        'Succeeded',
        'Succeeded',
      ]);
    },
  );

  it(
    'symlinks at every picture name the runner would use next, into the private store and onto a canary file: both ' +
      'untouched, the pictures reach the phone',
    { timeout: 180_000 },
    async () => {
      const phone = e2e.phone('+14155550143');
      const canaryDir = mkdtempSync(join(tmpdir(), 'tether-canary-'));
      chmodSync(canaryDir, 0o755);
      const canary = join(canaryDir, 'canary');
      writeFileSync(canary, 'CANARY-FILE', { mode: 0o666 });
      chmodSync(canary, 0o666); // writable by the supervisor's user: only its own care keeps it intact
      const script = join(agentFolder(e2e, 'plant-'), 'plant.sh');
      await phone.send(
        `script:\ntool: Bash ${JSON.stringify({ command: `bash ${script}` })}\n` +
          `tool: mcp__tether__screenshot ${JSON.stringify({ url: pageUrl, caption: 'the page' })}\nwrite: shown.txt ` +
          `= a change to review\nsay: planted the links`,
      );
      await phone.next(/🔐/);
      // The Pod runs: its Session names the picture folder, its git-store volume the claim of the private store,
      // which the local node keeps in a folder of its own (volumes/<namespace>/<claim>).
      const [session] = await mine(phone);
      const name = session!.metadata.name!;
      const namespace = e2e.stack.runnerNamespace;
      const pod = await e2e.kubeConfig
        .makeApiClient(CoreV1Api)
        .readNamespacedPod({ namespace, name: session!.status!.podName! });
      const storeClaim = pod.spec!.volumes!.find((v) => v.name === 'git-store')!.persistentVolumeClaim!.claimName;
      expect(storeClaim).not.toBe(session!.spec.workspace);
      const store = join(e2e.stateDir, 'volumes', namespace, storeClaim, 'store.git');
      const before = { config: readFileSync(join(store, 'config')), head: readFileSync(join(store, 'HEAD')) };
      const links: Array<[string, string]> = [
        ['diff-1.png', join(store, 'config')],
        ['diff-2.png', join(store, 'config')],
        ['diff-3.png', join(store, 'HEAD')],
        ['diff-r1-1.png', join(store, 'HEAD')],
        ['screenshot-1.jpg', canary],
        ['screenshot-2.jpg', canary],
      ];
      writeFileSync(
        script,
        [
          ...devServerLines(dirname(script), PAGE_PORT, '<!doctype html><h1>Sample page</h1>'),
          `mkdir -p ../media/${name}`,
          ...links.map(([file, target]) => `ln -sfn ${target} ../media/${name}/${file}`),
        ].join('\n'),
        { mode: 0o644 },
      );
      await phone.send('allow');
      await phone.next(/Reply \*approve\*/);

      // The links are in place (the attack ran), and nothing was written through them.
      const planted = join(e2e.stateDir, 'volumes', namespace, session!.spec.workspace, 'media', name);
      expect(
        readdirSync(planted)
          .filter((file) => lstatSync(join(planted, file)).isSymbolicLink())
          .sort(),
      ).toEqual(links.map(([file]) => file).sort());
      expect(readFileSync(canary, 'utf8')).toBe('CANARY-FILE');
      expect(readFileSync(join(store, 'config'))).toEqual(before.config);
      expect(readFileSync(join(store, 'HEAD'))).toEqual(before.head);
      await phone.send('approve');
      await phone.next(/Pull request opened/);
      // The screenshots come as the Session ends, after the review's picture.
      await eventually(() => {
        const pictures = phone.received().flatMap((m) => m.mediaUrls);
        expect(
          ['screenshot-1.jpg', 'diff-1.png'].filter(
            (file) => !pictures.some((url) => url.includes(`/${name}/${file}?`)),
          ),
        ).toEqual([]);
      });
      expect(readFileSync(canary, 'utf8')).toBe('CANARY-FILE');
    },
  );
});
