// The supervisor loads code from its image only. CommonJS looks for a package it cannot find in
// node_modules in $HOME/.node_modules and $HOME/.node_libraries as well, and the runner
// container's HOME is on the agent's volume: the runner's command turns those lookups off.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUNNER_COMMAND } from '../../controller/builders.ts';

/** A HOME holding a package in each global folder Node knows; loading one leaves a mark. */
function plantedHome(): { home: string; marks: string[] } {
  const home = mkdtempSync(join(tmpdir(), 'tether-home-'));
  const marks: string[] = [];
  for (const folder of ['.node_modules', '.node_libraries']) {
    const mark = join(home, `loaded-from${folder}`);
    mkdirSync(join(home, folder, `planted${folder.replace('.', '-')}`), { recursive: true });
    writeFileSync(
      join(home, folder, `planted${folder.replace('.', '-')}`, 'index.js'),
      `require('node:fs').writeFileSync(${JSON.stringify(mark)}, 'x');`,
    );
    marks.push(mark);
  }
  return { home, marks };
}

const requireBoth =
  "for (const name of ['planted-node_modules', 'planted-node_libraries']) { try { require(name); } catch (error) { " +
  'console.log(error.code); } }';

describe("the runner's module path", () => {
  it('reaches no package in HOME (the agent could write one there)', () => {
    const { home, marks } = plantedHome();
    const flags = RUNNER_COMMAND.slice(1, -1);
    const run = spawnSync(process.execPath, [...flags, '-e', requireBoth], {
      env: { HOME: home, PATH: process.env.PATH },
      encoding: 'utf8',
    });
    expect(run.stdout.trim().split('\n')).toEqual(['MODULE_NOT_FOUND', 'MODULE_NOT_FOUND']);
    expect(marks.filter((m) => existsSync(m))).toEqual([]);
  });

  it('would, without the flag (the planted packages are real)', () => {
    const { home, marks } = plantedHome();
    const run = spawnSync(process.execPath, ['-e', requireBoth], {
      env: { HOME: home, PATH: process.env.PATH },
      encoding: 'utf8',
    });
    expect(run.stdout.trim()).toBe('');
    expect(marks.filter((m) => existsSync(m))).toEqual(marks);
  });
});
