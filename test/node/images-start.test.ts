// Each image really starts, as the chart and the controller run it: the entrypoint, files and
// modules are there (a configuration error is the first thing each component can say, and it says
// it only after every module loaded), the user is the non-root one the Pods name, the root
// filesystem is read-only where the chart makes it so, and the runner's tools work. Host network
// only: the one page Chromium renders is its own.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { AGENT_HOST_COMMAND, RUNNER_COMMAND } from '../../controller/builders.ts';
import { AGENT_UID, RUNNER_UID } from '../../controller/runner-uids.ts';
import { docker, imageName, requireImage, runContainer, type Component } from '../support/images.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

const config = (component: Component) =>
  JSON.parse(docker(['image', 'inspect', '--format', '{{json .Config}}', imageName(component)]).stdout) as {
    User: string;
    Cmd: string[];
    Entrypoint: string[] | null;
    Env: string[];
  };
const claudeBinary = '/app/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude';
const chartUser = `${RUNNER_UID}:${RUNNER_UID}`;

beforeAll(() => {
  for (const component of ['controller', 'relay', 'runner'] as const) requireImage(component);
});

describe('controller and relay images', () => {
  it("run as the chart's user with a read-only root and stop at their configuration, naming the variable", async () => {
    const controller = await runContainer('controller', [], {
      user: chartUser,
      readOnly: true,
      env: { TETHER_METRICS_PORT: 'not-a-port', TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY },
    });
    expect(controller.stderr).toContain(
      'tether-controller: configuration error: TETHER_METRICS_PORT: "not-a-port" is invalid',
    );
    expect(controller.status).toBe(2);
    // Nothing configured: the relay names its first required variable.
    const relay = await runContainer('relay', [], { user: chartUser, readOnly: true });
    expect(relay.stderr).toContain('tether-relay: configuration error: PUBLIC_URL: Expected required property');
    expect(relay.status).toBe(2);
  });

  it.each<Component>(['controller', 'relay'])('%s: carries no npm and no build-time CA', async (component) => {
    expect(config(component).User).toBe(chartUser);
    expect(config(component).Env.join('\n')).not.toContain('NODE_EXTRA_CA_CERTS');
    const look = await runContainer(component, ['-c', 'command -v npm; ls /run/secrets 2>&1; node --version'], {
      entrypoint: 'sh',
    });
    expect(look.stdout).toMatch(/^ls: cannot access '\/run\/secrets': No such file or directory\nv24\./);
  });
});

describe('runner image', () => {
  it('starts the supervisor and the agent host the controller names, under tini', async () => {
    const image = config('runner');
    expect(image.Entrypoint).toEqual(['/usr/bin/tini', '--']);
    expect(image.Cmd).toEqual(RUNNER_COMMAND);
    expect(image.User).toBe(chartUser);
    expect(image.Env.join('\n')).not.toContain('NODE_EXTRA_CA_CERTS');
    const agentHost = await runContainer('runner', AGENT_HOST_COMMAND, {
      user: `${AGENT_UID}:${RUNNER_UID}`,
      env: { TETHER_AGENT_SOCKET: 'relative.sock' },
    });
    expect(agentHost.stderr).toContain('TETHER_AGENT_SOCKET: "relative.sock" is invalid');
    expect(agentHost.status).toBe(2);
  });

  it("has git, tini, and the Claude Code binary of the pinned Agent SDK, which the agent's user can run", async () => {
    const tools = await runContainer('runner', ['sh', '-c', 'id -u; git --version; tini --version'], {
      readOnly: true,
      tmpfs: ['/workspace', '/tmp'],
    });
    expect(tools.stdout).toMatch(new RegExp(`^${RUNNER_UID}\\ngit version 2\\.\\d+.*\\ntini version \\d`));
    const claude = await runContainer('runner', [claudeBinary, '--version'], {
      user: `${AGENT_UID}:${RUNNER_UID}`,
      readOnly: true,
      tmpfs: ['/workspace', '/tmp'],
    });
    expect(claude.stdout).toMatch(/\d+\.\d+\.\d+ \(Claude Code\)/);
    expect(claude.status).toBe(0);
  });

  it(`renders a diff image and a page served on \
loopback with headless Chromium, through the runner's own code`, async () => {
    const page = createServer((_req, res) =>
      res.setHeader('content-type', 'text/html').end('<!doctype html><h1>served on loopback</h1>'),
    );
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
    const script = [
      "import { Browsers, captureScreenshot } from '/app/runner-image/pictures/chromium.ts';",
      "import { DiffDrawer } from '/app/runner-image/pictures/diff-review.ts';",
      'const browsers = new Browsers();',
      "const review = await new DiffDrawer(browsers).review('diff --git a/a.ts b/a.ts\\n--- a/a.ts\\n+++ " +
        "b/a.ts\\n@@ -1 +1 @@\\n-old\\n+new\\n', '1 file changed');",
      'const png = review.pictures[0].image;',
      `const jpeg = await captureScreenshot(browsers, '${url}');`,
      'await browsers.close();',
      'console.log(png.subarray(1, 4).toString(), png.readUInt32BE(16), png.readUInt32BE(20), jpeg.subarray(0, ' +
        "3).toString('hex'), jpeg.length);",
    ].join('\n');
    try {
      const render = await runContainer('runner', ['node', '--input-type=module', '-e', script], {
        readOnly: true,
        tmpfs: ['/workspace', '/tmp'],
        timeoutMs: 90_000,
      });
      expect(render.stderr).toBe('');
      const [magic, width, height, jpegMagic, jpegBytes] = render.stdout.trim().split(' ');
      expect([magic, jpegMagic]).toEqual(['PNG', 'ffd8ff']);
      expect(Number(width)).toBeGreaterThan(100);
      expect(Number(height)).toBeGreaterThan(20);
      expect(Number(jpegBytes)).toBeGreaterThan(2000);
    } finally {
      page.close();
    }
  });
});
