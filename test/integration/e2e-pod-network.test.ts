// End to end on the local stack (root, as CI runs it), real Claude Code and a scripted model the test
// runs on the host's loopback: a runner Pod is one network, as in a cluster. The agent starts a dev
// server on the Pod's loopback from a Bash step and asks for a screenshot of it: the supervisor's
// Chromium opens the agent's server and the phone receives the picture. A listener of the host's
// loopback on the same port — what the supervisor reached when it ran on the host's network — gets no
// connection, while the Pod fetched the repository, called the model and opened the pull request
// through the egress proxy.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devServerLines } from '../support/dev-server.ts';
import { agentFolder, startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const asRoot = process.getuid?.() === 0;
const PHONE = '+14155550191';
const model = useScriptedModel();
let e2e: E2E;
/** A listener on the host's loopback that counts its connections; its port is also the agent's server's. */
let hostListener: Server;
let hostConnections = 0;
let port: number;
let script: string;

beforeAll(async () => {
  if (!asRoot) return;
  hostListener = createServer((socket) => {
    hostConnections += 1;
    socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n<h1>the host</h1>');
  });
  await new Promise<void>((resolve) => hostListener.listen(0, '127.0.0.1', resolve));
  port = (hostListener.address() as AddressInfo).port;
  e2e = await startE2E({
    numbers: [PHONE],
    podEnv: model.env(),
    controllerEnv: { TETHER_RUNNER_PERMISSION_POLICY: '{"allow":["Bash","mcp__tether__screenshot"]}' },
  });
  const folder = agentFolder(e2e, 'dev-server-');
  script = join(folder, 'start.sh');
  writeFileSync(script, devServerLines(folder, port, '<!doctype html><h1>Served by the agent</h1>').join('\n'), {
    mode: 0o644,
  });
}, 90_000);
afterAll(async () => {
  await e2e?.stop();
  hostListener?.close();
});

describe.runIf(asRoot)("end to end: a runner Pod's containers share one network", () => {
  it(
    "a screenshot of the agent's dev server on the Pod's loopback reaches the phone; the host's listener on that " +
      'port gets no connection',
    { timeout: 180_000 },
    async () => {
      const phone = e2e.phone(PHONE);
      const url = `http://localhost:${port}/`;
      await phone.send(
        `script:\ntool: Bash ${JSON.stringify({ command: `sh ${script}` })}\n` +
          `tool: mcp__tether__screenshot ${JSON.stringify({ url, caption: 'the dev server' })}\n` +
          'write: shown.txt = a change to review\nsay: started the dev server',
      );
      await phone.next(/Reply \*approve\*/);
      await phone.send('approve');
      await phone.next(/Pull request opened/);
      const [session] = (await e2e.list()).filter((s) => s.spec.phone === PHONE);
      const name = session!.metadata.name!;
      await eventually(() => {
        const pictures = phone.received().flatMap((m) => m.mediaUrls);
        expect(pictures.filter((link) => link.includes(`/${name}/screenshot-1.jpg?`))).toHaveLength(1);
      });
      const picture = phone
        .received()
        .flatMap((m) => m.mediaUrls)
        .find((link) => link.includes('/screenshot-1.jpg?'))!;
      const response = await fetch(picture);
      expect(response.headers.get('content-type')).toBe('image/jpeg');
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(1000);

      // The agent's server answered the Bash step's probe and then the supervisor's Chromium.
      const workspace = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, session!.spec.workspace);
      expect(readFileSync(join(workspace, 'served.log'), 'utf8').split('\n')).toContain('GET /');
      expect(hostConnections).toBe(0);
      // The Pod's other traffic went through the egress proxy: the model answered, the pull request is open.
      expect(model.model.requests.length).toBeGreaterThan(0);
      expect(e2e.github.pulls).toHaveLength(1);
    },
  );
});
