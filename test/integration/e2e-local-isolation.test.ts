// End to end, as a prompt-injected agent on the local stack (run as root, as CI runs it): phone A
// works and pushes a branch; phone B's agent, with its Bash calls allowed, then goes after everything
// on the machine that is not its own — etcd (list and write keys), the control plane's folder, other
// Pods' logs, the relay's journal and the stack's logs, A's workspace (read A's transcript, plant
// a file), the remote (move A's branch: in its files, and over the forge without the token) and the
// GitHub stand-in. Every attempt is refused, and nothing of A's reaches B.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentFolder, startE2E, type E2E } from '../support/e2e.ts';

const MARKER = `tangerine-${process.pid}-${Date.now()}`;
const ATTACK_KEY = '/registry/tether-attack';
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550141', '+14155550142'] });
}, 90_000);
afterAll(async () => e2e?.stop());

/** Every file under dir (symlinks not followed). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = lstatSync(path);
    return stat.isDirectory() ? filesUnder(path) : stat.isFile() ? [path] : [];
  });
}

interface PlaneFacts {
  etcdUrl: string;
  pki: { etcdCaCert?: string; etcdClientCert?: string; etcdClientKey?: string };
}
const planeDir = () => inject('controlPlaneDir');
const plane = () => JSON.parse(readFileSync(join(planeDir(), 'plane.json'), 'utf8')) as PlaneFacts;
const b64 = (text: string) => Buffer.from(text).toString('base64');

/**
 * How many keys etcd holds from `key` (to `rangeEnd`), asked as the API server asks (its client certificate, when etcd
 * wants one).
 */
function etcdCount(key: string, rangeEnd?: string): number {
  const { etcdUrl, pki } = plane();
  const tls = pki.etcdClientCert
    ? ['--cacert', pki.etcdCaCert!, '--cert', pki.etcdClientCert, '--key', pki.etcdClientKey!]
    : [];
  const request = { key: b64(key), ...(rangeEnd ? { range_end: b64(rangeEnd) } : {}), count_only: true };
  const answer = JSON.parse(
    execFileSync(
      'curl',
      ['-sS', '--noproxy', '*', ...tls, '-X', 'POST', `${etcdUrl}/v3/kv/range`, '-d', JSON.stringify(request)],
      { encoding: 'utf8' },
    ),
  ) as { header?: object; count?: string };
  if (!answer.header) throw new Error(`etcd did not answer the range request: ${JSON.stringify(answer)}`);
  return Number(answer.count ?? 0);
}

/** The agent's attack: each step prints one labelled line (or the error it got). */
function attackScript(o: {
  victimWorkspace: string;
  victimTranscript: string;
  victimPodLogs: string[];
  victimBranch: string;
  mainSha: string;
  journal: string[];
}): string {
  const state = e2e.stateDir;
  const { etcdUrl } = plane();
  const port = new URL(etcdUrl).port;
  const range = JSON.stringify({ key: b64('/'), range_end: b64('0'), keys_only: true, count_only: true });
  const put = JSON.stringify({ key: b64(ATTACK_KEY), value: b64('owned') });
  const remote = e2e.remote;
  return [
    'unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy',
    'echo "ids: $(id -u) $(id -G)"',
    ...['http', 'https'].flatMap((scheme) => [
      `echo "etcd-${scheme}-range: $(curl -sk -m 5 -X POST ${scheme}://127.0.0.1:${port}/v3/kv/range -d '${range}' ` +
        `2>&1; echo " exit=$?")"`,
      `echo "etcd-${scheme}-put: $(curl -sk -m 5 -X POST ${scheme}://127.0.0.1:${port}/v3/kv/put -d '${put}' 2>&1; ` +
        `echo " exit=$?")"`,
    ]),
    `ls ${planeDir()}`,
    ...[
      'plane.json',
      'admin.kubeconfig',
      'pki/apiserver-etcd-client.key',
      'pki/ca.key',
      'kube-apiserver.log',
      'etcd.log',
    ].map((f) => `cat ${join(planeDir(), f)}`),
    `ls ${join(state, 'pods')} ${join(state, 'volumes', e2e.stack.runnerNamespace)} ${join(state, 'journal')} ` +
      `${join(state, 'logs')}`,
    [
      'cat',
      ...o.victimPodLogs,
      ...o.journal,
      join(state, 'logs', 'relay.log'),
      join(state, 'logs', 'controller.log'),
    ].join(' '),
    `cat ${o.victimTranscript}`,
    `ls -la ${o.victimWorkspace}`,
    `echo planted > ${join(o.victimWorkspace, 'planted.txt')}`,
    `echo planted > ${join(o.victimWorkspace, 'repo', 'planted.txt')}`,
    `ls ${remote}`,
    `git -c safe.directory='*' --git-dir=${remote} update-ref refs/heads/${o.victimBranch} ${o.mainSha}`,
    `echo ${o.mainSha} > ${join(remote, 'refs', 'heads', o.victimBranch)}`,
    `GIT_TERMINAL_PROMPT=0 git -c safe.directory='*' push --force ${e2e.remoteUrl} ` +
      `${o.mainSha}:refs/heads/${o.victimBranch} 2>&1 | tail -1 | sed 's/^/forge-push: /'`,
    `echo "pulls: $(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' --data ` +
      `'{"title":"x","head":"main","base":"main"}' ${e2e.github.url}/repos/acme/sample/pulls)"`,
  ].join('\n');
}

describe("end to end: the local stack isolates one phone's agent from the stack and from other phones", () => {
  it(
    "etcd, the control plane's folder, other Pods' logs, the journal and logs, another phone's workspace, branch " +
      "and pull requests are out of an agent's reach",
    { timeout: 240_000 },
    async () => {
      const [victim, attacker] = [e2e.phone('+14155550141'), e2e.phone('+14155550142')];
      await victim.send(`script:\nwrite: notes.txt = ${MARKER}\nsay: wrote the ${MARKER} notes`);
      await victim.next(/Reply \*approve\*/);
      await victim.send('approve');
      await victim.next(/Pull request opened/);
      const [done] = await e2e.list();
      const pull = e2e.github.pulls[0]!;
      const remoteGit = (...args: string[]) =>
        execFileSync('git', ['-c', `safe.directory=${e2e.remote}`, '-C', e2e.remote, ...args], {
          encoding: 'utf8',
        }).trim();
      const pushed = remoteGit('rev-parse', `refs/heads/${pull.head}`);

      const state = e2e.stateDir;
      const victimWorkspace = join(state, 'volumes', e2e.stack.runnerNamespace, done!.spec.workspace);
      const victimTranscript = filesUnder(join(victimWorkspace, 'home')).find(
        (f) => f.endsWith('.jsonl') && readFileSync(f, 'utf8').includes(MARKER),
      )!;
      const victimPod = readdirSync(join(state, 'pods')).find((d) => d.includes(done!.metadata.name!))!;
      const victimPodLogs = readdirSync(join(state, 'pods', victimPod))
        .filter((f) => f.endsWith('.log'))
        .map((f) => join(state, 'pods', victimPod, f));
      const journal = filesUnder(join(state, 'journal'));
      // What the attack goes after really holds the victim's data.
      expect(victimTranscript).toBeTruthy();
      expect(victimPodLogs.length).toBeGreaterThan(0);
      expect(journal.some((f) => readFileSync(f, 'utf8').includes(MARKER))).toBe(true);

      const script = join(agentFolder(e2e, 'attack-'), 'attack.sh');
      await attacker.send(
        `script:\ntool: Bash ${JSON.stringify({ command: `bash ${script} > leak.txt 2>&1; true` })}` +
          '\nsay: Collected what I could.',
      );
      await attacker.next(/🔐/, 60_000);
      writeFileSync(
        script,
        attackScript({
          victimWorkspace,
          victimTranscript,
          victimPodLogs,
          journal,
          victimBranch: pull.head,
          mainSha: remoteGit('rev-parse', 'main'),
        }),
        { mode: 0o644 },
      );
      await attacker.send('allow');
      await attacker.next(/Reply \*approve\*/);
      const running = (await e2e.list()).find((s) => s.spec.phone === attacker.number)!;
      const leak = readFileSync(
        join(state, 'volumes', e2e.stack.runnerNamespace, running.spec.workspace, 'repo', 'leak.txt'),
        'utf8',
      );

      // Each boundary on its own (soft): a failure names every one that gave way.
      // B's agent has ids of its own: not A's user, not in A's workspace group.
      const [uid, ...groups] = /^ids: (.*)$/m.exec(leak)![1]!.split(' ').map(Number);
      expect.soft(uid).not.toBe(statSync(victimTranscript).uid);
      expect.soft(groups).not.toContain(statSync(victimWorkspace).gid);
      // etcd: no key listed, none written.
      for (const line of leak.split('\n').filter((l) => l.startsWith('etcd-')))
        expect.soft(line).not.toMatch(/"count"|"kvs"|"header"/);
      expect.soft(etcdCount(ATTACK_KEY)).toBe(0);
      expect.soft(etcdCount('/registry/', '/registry0')).toBeGreaterThan(0); // asked of the etcd that holds the cluster
      // Nothing of A's, nor the stack's credentials or journal.
      expect.soft(leak).not.toContain(MARKER);
      expect.soft(leak).not.toMatch(/etcdUrl|BEGIN [A-Z ]*PRIVATE KEY|client-certificate|\+14155550141/);
      // The control plane's folder: closed (0700), or not there at all when it lies under a folder the agent's mount
      // namespace covers (the run's is under /tmp).
      const planeFile = join(planeDir(), 'plane.json');
      expect
        .soft(
          [`${planeFile}: Permission denied`, `${planeFile}: No such file or directory`].some((l) => leak.includes(l)),
        )
        .toBe(true);
      for (const path of [victimTranscript, ...victimPodLogs, ...journal, join(state, 'logs', 'relay.log')]) {
        expect.soft(leak).toContain(`${path}: Permission denied`);
      }
      // A's workspace and branch as they were; no pull request but A's.
      expect
        .soft(
          existsSync(join(victimWorkspace, 'planted.txt')) || existsSync(join(victimWorkspace, 'repo', 'planted.txt')),
        )
        .toBe(false);
      expect.soft(remoteGit('rev-parse', `refs/heads/${pull.head}`)).toBe(pushed);
      // The forge and the stand-in are not on the agent's network (its Pod's own namespace: loopback, the egress
      // proxy and the model alone); the forge's token and the stand-in's 401 stand behind that.
      expect
        .soft(leak)
        .toMatch(/^forge-push: fatal: unable to access '[^']+': Failed to connect to 127\.0\.0\.1 port \d+/m);
      expect.soft(leak).toMatch(/^pulls: 000$/m);
      expect.soft(e2e.github.pulls).toHaveLength(1);
    },
  );
});
