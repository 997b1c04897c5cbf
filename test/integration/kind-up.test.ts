// make kind-up cannot run here (no Docker engine). This runs the script against recording
// stand-ins for docker, kind and helm, then renders the chart with the real helm and the
// exact values the script passed: the images it built are the images the chart deploys.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { TEST_API_SERVER_CIDRS } from '../unit/chart-render.ts';

function stubs(options: { dockerWorks: boolean }) {
  const dir = mkdtempSync(join(tmpdir(), 'tether-kind-'));
  const log = join(dir, 'calls.log');
  const stub = (name: string, body = '') => {
    writeFileSync(
      join(dir, name),
      `#!/usr/bin/env bash\nprintf '%s\\0' ${name} "$@" >> ${log}; printf '\\n' >> ${log}\n${body}\n`,
    );
    chmodSync(join(dir, name), 0o755);
  };
  stub('docker', options.dockerWorks ? '' : '[[ $1 == info ]] && exit 1');
  stub('kind', '[[ $1 == get ]] && echo other-cluster; true');
  stub('kubectl');
  stub('helm');
  const calls = () =>
    (existsSync(log) ? readFileSync(log, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\0').filter(Boolean));
  return { dir, calls };
}

const run = (dir: string, env: Record<string, string> = {}) =>
  spawnSync('bash', ['scripts/kind-up.sh'], {
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: `${dir}:${process.env.PATH}`,
      HELM_BIN: join(dir, 'helm'),
      TETHER_REPO_URL: 'https://github.com/acme/web.git',
      ...env,
    },
  });

describe('make kind-up', () => {
  it('creates the cluster, builds and loads the three images, and installs the chart with them', () => {
    const { dir, calls } = stubs({ dockerWorks: true });
    const result = run(dir, { GITHUB_TOKEN: 'ghp_x' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const all = calls();
    expect(all).toContainEqual(['kind', 'create', 'cluster', '--name', 'tether', '--wait', '120s']);
    const builds = all.filter((c) => c[0] === 'docker' && c[1] === 'build');
    expect(builds.map((c) => [c[3], c[5]])).toEqual([
      ['controller/Dockerfile', 'tether.local/tether-controller:dev'],
      ['relay/Dockerfile', 'tether.local/tether-relay:dev'],
      ['runner-image/Dockerfile', 'tether.local/tether-runner:dev'],
    ]);
    for (const [, , , dockerfile] of builds) expect(existsSync(dockerfile!)).toBe(true);
    expect(all.filter((c) => c[0] === 'kind' && c[1] === 'load').map((c) => c.at(-1))).toEqual(builds.map((c) => c[5]));
    expect(result.stdout).toContain('port-forward svc/tether-relay 8080:80');

    // Render the chart with exactly the values the script gave helm.
    const helmArgs = all.find((c) => c[0] === 'helm')!.slice(1);
    expect(helmArgs.slice(0, 4)).toEqual(['upgrade', '--install', 'tether', 'charts/tether']);
    const values = helmArgs.flatMap((arg, i) => (/^--set(-string)?$/.test(arg) ? [arg, helmArgs[i + 1]!] : []));
    const helm = execFileSync('bash', ['scripts/ensure-helm.sh'], { encoding: 'utf8' }).trim();
    // `helm template` looks nothing up: the API server's addresses the install finds in the cluster are given here.
    const apiServer = ['--set', `networkPolicy.apiServer.cidrs={${TEST_API_SERVER_CIDRS.join(',')}}`];
    const template = ['template', 'tether', 'charts/tether', '--namespace', 'tether', ...values, ...apiServer];
    const rendered = execFileSync(helm, template, { encoding: 'utf8' });
    const docs = parseAllDocuments(rendered)
      .map((d) => d.toJS())
      .filter(Boolean);
    const images = docs
      .filter((d) => d.kind === 'Deployment')
      .flatMap((d) => d.spec.template.spec.containers.map((c: { image: string }) => c.image));
    // The controller's image twice: the controller, and the egress proxy it also carries.
    expect(images.sort()).toEqual([
      'tether.local/tether-controller:dev',
      'tether.local/tether-controller:dev',
      'tether.local/tether-relay:dev',
    ]);
    expect(rendered).toContain('tether.local/tether-runner:dev');
    expect(rendered).toContain('https://github.com/acme/web.git');
  });

  it('says what to do when no Docker engine answers', () => {
    const { dir, calls } = stubs({ dockerWorks: false });
    const result = run(dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/no Docker engine answers.*make dev/);
    expect(calls().filter((c) => c[0] !== 'docker')).toEqual([]);
  });
});
