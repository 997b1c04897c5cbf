// End to end on the local stack (root, as CI runs it), real Claude Code and the scripted model: the
// agent's shell commands have a network of their Pod's own — loopback with the API server, the relay
// and the egress proxy carried in — so a direct connection to a listener of the machine fails, and the same request
// through the proxy to a host nobody listed asks the phone: allow once works once, deny gives the agent
// the reason, allow always (repository) holds for the next command. The supervisor's fetch and push and
// the model still work, through the proxy; the agent's git push through it is refused; the stack's own
// ports (the API server's, the relay's) are refused without asking the phone.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { agentFolder, startE2E, type E2E, type Phone } from '../support/e2e.ts';

const asRoot = process.getuid?.() === 0;
const PHONE = '+14155550181';
const MARK = `kumquat-${process.pid}`;
let e2e: E2E;
const listeners: Server[] = [];
/** The port of the listener the phone allows, and of the one it denies. */
let port: number;
let deniedPort: number;
/** The paths the listeners were asked for. */
const reached: string[] = [];
let script: string;

beforeAll(async () => {
  if (!asRoot) return;
  [port, deniedPort] = [await listen(), await listen()];
  e2e = await startE2E({
    numbers: [PHONE],
    // The agent's shell commands run without a tool approval: the phone answers only about hosts.
    controllerEnv: { TETHER_RUNNER_PERMISSION_POLICY: '{"allow":["Bash"]}' },
  });
  script = join(agentFolder(e2e, 'egress-'), 'try.sh');
  writeFileSync(script, tryScript(), { mode: 0o644 });
}, 90_000);
afterAll(async () => {
  await e2e?.stop();
  for (const listener of listeners) listener.close();
});

/** A listener on the host's loopback (an outside host, as the local stack plays one); its port. */
async function listen(): Promise<number> {
  const listener = createServer((req, res) => {
    reached.push(req.url ?? '');
    res.end(`reached ${MARK} ${req.url}\n`);
  });
  listeners.push(listener);
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  return (listener.address() as AddressInfo).port;
}

/** One try of the agent per label: its output (and exit code) in ../egress-<label>.txt, beside the checkout. */
function tryScript(): string {
  const through = `curl -sS -i -m 90 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${port}/$1`;
  return [
    'case "$1" in',
    `  direct) curl -sS -m 5 --noproxy '*' http://127.0.0.1:${port}/direct ;;`,
    // Through the proxy, to the forge, without the loopback exception: refused before the forge is asked.
    `  push) env -u NO_PROXY -u no_proxy GIT_TERMINAL_PROMPT=0 git -c safe.directory='*' -c http.proxy="$HTTP_PROXY" ` +
      `push ${e2e.remoteUrl} HEAD:refs/heads/agent-push ;;`,
    // The stack's own ports (the API server's, the relay's under another name of loopback): denied, nobody asked.
    `  own) curl -sS -i -m 90 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${apiPort()}/version ;;`,
    `  ownname) curl -sS -i -m 90 --noproxy '' -x "$HTTP_PROXY" http://localhost:${relayPort()}/healthz ;;`,
    `  denied) curl -sS -i -m 90 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${deniedPort}/denied ;;`,
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
const apiPort = () => Number(new URL(e2e.kubeConfig.getCurrentCluster()!.server).port);
const relayPort = () => Number(new URL(e2e.stack.relayUrl).port);

describe.runIf(asRoot)('end to end: the agent reaches the network only through the egress proxy', () => {
  it(
    'direct fails; through the proxy the phone is asked: once works once, deny says why, always holds for the ' +
      "repository's next command; the supervisor's push goes through the proxy, the agent's is refused",
    { timeout: 420_000 },
    async () => {
      const phone = e2e.phone(PHONE);
      const askedAbout = (at: number) =>
        new RegExp(`🌐 The agent wants to reach 127\\.0\\.0\\.1:${at} \\(for \`sh [^\`]*try\\.sh `);
      const asked = askedAbout(port);
      await phone.send(
        [
          'script:',
          bash('direct'),
          bash('own'),
          bash('ownname'),
          bash('once'),
          bash('again'),
          bash('denied'),
          bash('push'),
        ]
          .concat(['write: notes.txt = egress', 'say: tried the network'])
          .join('\n'),
      );
      expect((await phone.next(asked, 120_000)).body).toContain('try.sh once`');
      await phone.send('allow');
      // Allowed once: the next connection asks again.
      expect((await phone.next(asked, 120_000)).body).toContain('try.sh again`');
      await phone.send('allow always');
      expect((await phone.next(askedAbout(deniedPort), 120_000)).body).toContain('try.sh denied`');
      await phone.send('deny not this one');
      await phone.next(/Reply \*approve\*/, 180_000);
      const one = await session(phone);

      // Direct: the listener is not on the agent's network at all.
      expect(output(one, 'direct')).toMatch(/Failed to connect to 127\.0\.0\.1 port \d+.*exit=7/s);
      expect(reached).not.toContain('/direct');
      // The stack's own ports: refused by the install's list, and the phone was never asked about them.
      for (const [label, at] of [
        ['own', apiPort()],
        ['ownname', relayPort()],
      ] as const) {
        expect(output(one, label)).toMatch(/^HTTP\/1\.1 403 /m);
        expect(output(one, label)).toContain('denied by this install');
        expect(phone.received().filter((m) => m.body.includes('wants to reach') && m.body.includes(`:${at} `))).toEqual(
          [],
        );
      }
      // Allowed once, then always; deny reached the agent in words it can read.
      expect(output(one, 'once')).toContain(`reached ${MARK} /once`);
      expect(output(one, 'again')).toContain(`reached ${MARK} /again`);
      expect(output(one, 'denied')).toMatch(/^HTTP\/1\.1 403 /m);
      expect(output(one, 'denied')).toContain('denied from the phone');
      expect(reached).not.toContain('/denied');
      // The agent's push through the proxy: refused, and the forge has no such branch.
      expect(output(one, 'push')).toContain('the agent has no route to push');
      expect(output(one, 'push')).toMatch(/returned error: 403/);
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
      expect(records.find((r) => r.caller === 'agent' && r.port === port)).toMatchObject({ allowed: 2, refused: 0 });
      expect(records.find((r) => r.caller === 'agent' && r.port === deniedPort)).toMatchObject({
        allowed: 0,
        refused: 1,
      });
      expect(records.find((r) => r.caller === 'agent' && r.port === forgePort())!.refused).toBeGreaterThan(0);

      // The next command of the repository: allowed always, so nobody is asked.
      await phone.send(['script:', bash('later'), 'write: later.txt = later', 'say: again'].join('\n'));
      await phone.next(/Reply \*approve\*/, 180_000);
      const two = await session(phone);
      expect(two.metadata.name).not.toBe(one.metadata.name);
      expect(output(two, 'later')).toContain(`reached ${MARK} /later`);
      expect(phone.received().filter((m) => asked.test(m.body))).toHaveLength(2);
    },
  );
});
