// What the local node agent stages as the runner image is what runner-image/Dockerfile builds:
// the same checkout folders (less .dockerignore's names), the same packages, the same PATH and
// compile cache users; and the package closure follows package-lock.json as Node resolves.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_UID, RUNNER_UID } from '../../controller/runner-uids.ts';
import {
  DROPPED_PACKAGE_FILES,
  IGNORED_NAMES,
  IMAGE_PATH,
  imageFiles,
  RUNNER_IMAGE,
  RUNNER_IMAGE_UNINSTALLS,
} from '../../local/node-agent/image-content.ts';
import { packageClosure } from '../../local/node-agent/package-closure.ts';
import { instructions, ofKeyword, uninstalled } from '../support/dockerfiles.ts';

const root = join(import.meta.dirname, '../..');
const lines = instructions(join(root, 'runner-image/Dockerfile'));

describe('the runner image the local node stages', () => {
  it("holds what the Dockerfile copies and installs, with the image's PATH and compile cache users", () => {
    const copied = ofKeyword(lines, 'COPY')
      .filter((l) => !l.includes('--from'))
      .flatMap((l) => l.split(' ').slice(1, -1));
    expect([...RUNNER_IMAGE.paths].sort()).toEqual(copied.map((p) => p.replace(/\/$/, '')).sort());
    expect([...RUNNER_IMAGE_UNINSTALLS].sort()).toEqual(
      uninstalled(ofKeyword(lines, 'RUN').find((l) => l.includes('npm uninstall'))!).sort(),
    );
    expect(ofKeyword(lines, 'ENV')).toContain(`ENV PATH=${IMAGE_PATH}`);
    expect(RUNNER_IMAGE.compileCache).toEqual({
      script: 'runner-image/warm-compile-cache.ts',
      users: [RUNNER_UID, AGENT_UID],
    });
    const deleted = ofKeyword(lines, 'RUN').find((l) => l.includes('-delete'))!;
    for (const suffix of ['.d.ts', '.d.mts', '.d.cts', '.map']) {
      expect(deleted).toContain(`-name '*${suffix}'`);
      expect(DROPPED_PACKAGE_FILES.test(`x${suffix}`)).toBe(true);
    }
    expect(DROPPED_PACKAGE_FILES.test('x.ts')).toBe(false);
  });

  it('leaves out the names .dockerignore leaves out', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('**/'))
      .map((l) => l.slice(3));
    const example = (pattern: string) => pattern.replace('*', 'x');
    for (const pattern of ignored)
      expect(
        IGNORED_NAMES.some((r) => r.test(example(pattern))),
        pattern,
      ).toBe(true);
    expect(IGNORED_NAMES).toHaveLength(ignored.length);
  });

  it(`lists the entrypoints, Claude Code and the production \
packages, not tests, type declarations or dev tools`, () => {
    const files = new Set(imageFiles(root, RUNNER_IMAGE));
    for (const file of [
      'package.json',
      'runner-image/main.ts',
      'runner-image/agent-host/main.ts',
      'runner-image/CLAUDE.md',
      'common/log.ts',
      'node_modules/pino/package.json',
      'node_modules/highlight.js/styles/github-dark.min.css',
    ])
      expect(files, file).toContain(file);
    expect(
      [...files].some((f) => /^node_modules\/@anthropic-ai\/claude-agent-sdk-linux-[a-z0-9]+\/claude$/.test(f)),
    ).toBe(true);
    const unwanted = [...files].filter((f) =>
      new RegExp(
        /^(?!node_modules\/).*\.test\.ts$|\.d\.ts$|\.map$|/.source +
          /^node_modules\/(vitest|typescript|eslint|twilio|prom-client)\/|^(controller|relay|local|test)\//.source,
      ).test(f),
    );
    expect(unwanted).toEqual([]);
  });
});

describe('package closure', () => {
  const lockOf = (dir: string, packages: Record<string, object>) => {
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ packages }));
    for (const key of Object.keys(packages).filter(Boolean)) mkdirSync(join(dir, key), { recursive: true });
  };

  it(`resolves nested packages first, keeps installed optional \
and peer packages, skips dev-only and absent ones`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-closure-'));
    lockOf(dir, {
      '': { dependencies: { a: '1' } },
      'node_modules/a': {
        dependencies: { b: '1', '@s/c': '1' },
        optionalDependencies: { gone: '1' },
        peerDependencies: { d: '1', devonly: '1' },
      },
      'node_modules/a/node_modules/b': { dependencies: { e: '1' } },
      'node_modules/b': { dependencies: { unrelated: '1' } },
      'node_modules/@s/c': {},
      'node_modules/d': {},
      'node_modules/e': {},
      'node_modules/devonly': { dev: true },
      'node_modules/unrelated': {},
    });
    expect(packageClosure(dir, ['a'])).toEqual([
      'node_modules/@s/c',
      'node_modules/a',
      'node_modules/a/node_modules/b',
      'node_modules/d',
      'node_modules/e',
    ]);
  });

  it('says which package is missing and what to run', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-closure-'));
    lockOf(dir, { '': {}, 'node_modules/a': { dependencies: { b: '1' } } });
    expect(() => packageClosure(dir, ['a'])).toThrow(
      `b (needed by node_modules/a) is not installed in ${dir}: run npm ci`,
    );
  });
});
