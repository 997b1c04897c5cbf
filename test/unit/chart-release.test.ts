// What `make release` pins into the chart it pushes: image.digests after each image's tag
// (controller, relay, runner, the runner admission policy, the helm test Pod), set by
// scripts/pin-release-values.ts with values.yaml's comments kept; and the README's example values.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART_DIR, HELM_SETUP_TIMEOUT, find, helmBin, podTemplate, render, renderError } from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const DIGESTS = { controller: digest('a'), relay: digest('b'), runner: digest('c') };
const image = { registry: 'registry.example.com/tether', tag: '1.2.3', digests: DIGESTS };

describe('image.digests', () => {
  it('pins every image the chart names after its tag', async () => {
    const objects = await render({ image });
    const container = (suffix: string) =>
      podTemplate(find(objects, 'Deployment', suffix)).spec.containers[0] as unknown as { image: string };
    expect(container('controller').image).toBe(
      `registry.example.com/tether/tether-controller:1.2.3@${DIGESTS.controller}`,
    );
    expect(container('relay').image).toBe(`registry.example.com/tether/tether-relay:1.2.3@${DIGESTS.relay}`);
    const runner = `registry.example.com/tether/tether-runner:1.2.3@${DIGESTS.runner}`;
    const config = find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> };
    expect(config.data.TETHER_RUNNER_IMAGE).toBe(runner);
    const policy = find(objects, 'ValidatingAdmissionPolicy', 'runner-pods');
    expect(JSON.stringify(policy)).toContain(`c.image == '${runner}'`);
    const test = objects.find((o) => o.kind === 'Pod')! as unknown as { spec: { containers: { image: string }[] } };
    expect(test.spec.containers[0]!.image).toBe(`registry.example.com/tether/tether-relay:1.2.3@${DIGESTS.relay}`);
  });

  it('leaves the tag alone when empty, and refuses what is not a sha256 digest', async () => {
    const objects = await render({ image: { registry: 'r.example.com', tag: '1.2.3' } });
    const relay = podTemplate(find(objects, 'Deployment', 'relay')).spec.containers[0] as unknown as { image: string };
    expect(relay.image).toBe('r.example.com/tether-relay:1.2.3');
    expect(await renderError({ image: { ...image, digests: { relay: 'latest' } } })).toMatch(/digests\/relay/);
    expect(await renderError({ image: { ...image, digests: { proxy: digest('d') } } })).toMatch(/proxy/);
  });
});

describe('scripts/pin-release-values.ts', () => {
  const pin = (file: string, ...args: string[]) =>
    execFileSync('node', ['scripts/pin-release-values.ts', file, ...args], { encoding: 'utf8', stdio: 'pipe' });

  it('sets the registry, the tag and each digest in a copy of values.yaml, keeping its comments', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-pin-'));
    try {
      const file = join(dir, 'values.yaml');
      writeFileSync(file, readFileSync(join(CHART_DIR, 'values.yaml')));
      pin(file, '127.0.0.1:5000/tether', '0.2.0', ...Object.entries(DIGESTS).map(([c, d]) => `${c}=${d}`));
      const text = readFileSync(file, 'utf8');
      expect(parse(text).image).toMatchObject({ registry: '127.0.0.1:5000/tether', tag: '0.2.0', digests: DIGESTS });
      expect(text).toContain('# Tether: values.');
      expect(() => pin(file, 'r', '1.0.0', 'relay=latest')).toThrow(/component=sha256/);
      expect(() => pin(file, 'r', '1.0.0', `proxy=${digest('d')}`)).toThrow(/component=sha256/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('docs/examples/values-cloud.yaml', () => {
  it("renders with the README's --set values: Ingress, TLS, Secrets made beforehand, repositories", async () => {
    const objects = await render(parse(readFileSync('docs/examples/values-cloud.yaml', 'utf8')) as object, {
      extraArgs: [
        '--set',
        'relay.publicUrl=https://tether.example.com',
        '--set',
        'relay.repo.url=https://github.com/acme/web.git',
        '--set',
        'relay.twilio.whatsappFrom=whatsapp:+14155238886',
        '--set-string',
        'relay.allowedNumbers[0]=+14155550123',
      ],
    });
    const ingress = find(objects, 'Ingress', 'relay') as unknown as { spec: { tls: { secretName: string }[] } };
    expect(ingress.spec.tls[0]!.secretName).toBe('tether-tls');
    expect(objects.some((o) => o.kind === 'Secret' && /twilio|runner/.test(o.metadata.name))).toBe(false);
    expect(objects.some((o) => o.kind === 'Namespace')).toBe(false);
    const config = find(objects, 'ConfigMap', 'relay') as unknown as { data: Record<string, string> };
    expect(config.data.TETHER_REPOS).toContain('https://github.com/acme/api.git');
  });
});
