// The mount view of an isolated container (local/node-agent/mount-view.ts): which folders are covered,
// what is bound back, and the steps handed to the namespace's shell.
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mountView, mountViewCommand } from '../../local/node-agent/mount-view.ts';

describe('the mount view of an isolated container', () => {
  const root = mkdtempSync(join(tmpdir(), 'tether-mount-view-'));
  const run = join(root, 'run');
  const tmp = join(root, 'tmp');
  for (const dir of [run, tmp, join(tmp, 'state')]) mkdirSync(dir, { recursive: true });
  symlinkSync(run, join(root, 'var-run'));

  it('covers each folder once (a link to another is that folder), skips absent ones, keeps what lies under one', () => {
    const view = mountView(
      [join(tmp, 'state'), '/opt/images', tmp],
      [run, join(root, 'var-run'), tmp, join(root, 'absent')],
    );
    expect(view).toEqual({ hidden: [run, tmp], kept: [join(tmp, 'state')] });
  });

  it('hands the shell each cover, then what is bound back under it, then the command after `--`', () => {
    const command = mountViewCommand({ hidden: ['/run', '/tmp'], kept: ['/tmp/state'] });
    expect(command.slice(0, 5)).toEqual(['unshare', '--mount', '--propagation', 'private', '--']);
    expect(command.slice(8)).toEqual(['mount-view', 'hide:0755:/run', 'hide:1777:/tmp', 'keep:/tmp/state', '--']);
  });
});
