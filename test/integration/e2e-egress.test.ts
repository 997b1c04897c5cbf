// End to end on the local stack (root, as CI runs it), real Claude Code and the scripted model: the
// agent's shell commands have a network of their Pod's own — loopback with the egress proxy and the
// model carried in — so a direct connection to a listener of the machine fails, and the same request
// through the proxy to a host nobody listed asks the phone: allow once works once, deny gives the agent
// the reason, allow always (repository) holds for the next command. The supervisor's fetch and push and
// the model still work, through the proxy; the agent's git push through it is refused.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { startE2E, type E2E, type Phone } from '../support/e2e.ts';

const asRoot = process.getuid?.() === 0;
const PHONE = '+14155550181';
const MARK = `kumquat-${process.pid}`;
let e2e: E2E;
let listener: Server;
let port: number;
/** The paths the listener was asked for. */
const reached: string[] = [];
let script: string;

beforeAll(async () => {
  if (!asRoot) return;
  listener = createServer((req, res) => {
    reached.push(req.url ?? '');
    res.end(`reached ${MARK} ${req.url}\n`);
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as AddressInfo).port;
  e2e = await startE2E({
    numbers: [PHONE],
    // The agent's shell commands run without a tool approval: the phone answers only about hosts.
    controllerEnv: { TETHER_RUNNER_PERMISSION_POLICY: '{"allow":["Bash"]}' },
  });
  script = join(mkdtempSync(join(tmpdir(), 'tether-egress-')), 'try.sh');
  chmodSync(dirname(script), 0o755);
  writeFileSync(script, tryScript(), { mode: 0o644 });
}, 90_000);
afterAll(async () => {
  await e2e?.stop();
  listener?.close();
});

/** One try of the agent per label: its output (and exit code) in ../egress-<label>.txt, beside the checkout. */
function tryScript(): string {
  const through = `curl -sS -i -m 90 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${port}/$1`;
  return [
    'case "$1" in',
    `  direct) curl -sS -m 5 --noproxy '*' http://127.0.0.1:${port}/direct ;;`,
    // Through the proxy, to the forge, without the loopback exception: refused before the forge is asked.
    `  push) env -u NO_PROXY -u no_proxy GIT_TERMINAL_PROMPT=0 git -c http.proxy="$HTTP_PROXY" push ${e2e.remoteUrl} ` +
      'HEAD:refs/heads/agent-push ;;',
    `  *) ${through} ;;`,
    'esac > "../egress-$1.txt" 2>&1',
    'echo "exit=$?" >> "../egress-$1.txt"',
  ].join('\n');
}

const bash = (label: string) => `tool: Bash ${JSON.stringify({ command: `sh ${script} ${label}` })}`;

async function session(phone: Phone): Promise<Session> {
  const sessions = (await e2e.list()).filter((s) => s.spec.phone === phone.number);
  return sessions.at(-1)!;
}

const output = (s: Session, label: string) =>
  readFileSync(
    join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, s.spec.workspace, `egress-${label}.txt`),
    'utf8',
  );

const forgePort = () => Number(new URL(e2e.remoteUrl).port);

describe.runIf(asRoot)('end to end: the agent reaches the network only through the egress proxy', () => {
  it(
    'direct fails; through the proxy the phone is asked: once works once, deny says why, always holds for the ' +
      "repository's next command; the supervisor's push goes through the proxy, the agent's is refused",
    { timeout: 420_000 },
    async () => {
      const phone = e2e.phone(PHONE);
      const asked = new RegExp(`🌐 The agent wants to reach 127\\.0\\.0\\.1:${port} \\(for \`sh [^\`]*try\\.sh `);
      await phone.send(
        ['script:', bash('direct'), bash('once'), bash('again'), bash('always'), bash('push')]
          .concat(['write: notes.txt = egress', 'say: tried the network'])
          .join('\n'),
      );
      const first = await phone.next(asked, 120_000);
      expect(first.body).toMatch(/once\.?`\)/);
      await phone.send('allow');
      const second = await phone.next(asked, 120_000);
      expect(second.body).toContain('again');
      await phone.send('deny not this one');
      await phone.next(asked, 120_000);
      await phone.send('allow always');
      await phone.next(/Reply \*approve\*/, 180_000);
      const one = await session(phone);

      // Direct: the listener is not on the agent's network at all.
      expect(output(one, 'direct')).toMatch(/Failed to connect to 127\.0\.0\.1 port \d+.*exit=7/s);
      expect(reached).not.toContain('/direct');
      // Allowed once: that connection went through; the next one asked again, and deny reached the agent in words.
      expect(output(one, 'once')).toContain(`reached ${MARK} /once`);
      expect(output(one, 'again')).toMatch(/^HTTP\/1\.1 403 /m);
      expect(output(one, 'again')).toContain('denied from the phone');
      expect(reached).not.toContain('/again');
      expect(output(one, 'always')).toContain(`reached ${MARK} /always`);
      // The agent's push through the proxy: refused, and the forge has no such branch.
      expect(output(one, 'push')).toMatch(/403/);
      expect(output(one, 'push')).not.toMatch(/exit=0/);
      const branches = execFileSync('git', ['-c', 'safe.directory=*', '--git-dir', e2e.remote, 'branch', '--list'], {
        encoding: 'utf8',
      });
      expect(branches).not.toContain('agent-push');

      // The supervisor's own push (and fetch) went to the forge through the proxy, under its own name.
      await phone.send('approve');
      await phone.next(/Pull request opened/, 120_000);
      const done = await e2e.sessions.get(e2e.stack.namespace, one.metadata.name!);
      const records = done?.status?.egress ?? [];
      expect(records).toContainEqual(
        expect.objectContaining({
          caller: 'supervisor',
          host: '127.0.0.1',
          port: forgePort(),
          allowed: expect.any(Number),
        }),
      );
      expect(records.find((r) => r.caller === 'supervisor' && r.port === forgePort())!.allowed).toBeGreaterThan(0);
      const agentToListener = records.find((r) => r.caller === 'agent' && r.port === port)!;
      expect(agentToListener).toMatchObject({ allowed: 2, refused: 1 });
      expect(records.find((r) => r.caller === 'agent' && r.port === forgePort())!.refused).toBeGreaterThan(0);

      // The next command of the repository: allowed always, so nobody is asked.
      await phone.send(['script:', bash('later'), 'write: later.txt = later', 'say: again'].join('\n'));
      await phone.next(/Reply \*approve\*/, 180_000);
      const two = await session(phone);
      expect(two.metadata.name).not.toBe(one.metadata.name);
      expect(output(two, 'later')).toContain(`reached ${MARK} /later`);
      expect(phone.received().filter((m) => asked.test(m.body))).toHaveLength(3);
    },
  );
});
