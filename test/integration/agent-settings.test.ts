// A repository cannot loosen the install's permissions: its committed .claude/settings.json (allow
// rules, hooks) is never loaded by Claude Code, so its hooks never run and its allow rules ask anyway;
// and every tool call reaches Tether's policy, even those Claude Code would run unasked.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { answer, useRunnerTestbed } from '../support/runner.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const bed = useRunnerTestbed('agentset');
const model = useScriptedModel();

describe("the repository's own Claude settings", { timeout: 150_000 }, () => {
  it('are not loaded: no hook runs, an allowed-by-the-repository command is still asked', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'tether-hook-')), 'hook-ran');
    const hook = [{ hooks: [{ type: 'command', command: `touch ${marker}` }] }];
    const settings = {
      permissions: { allow: ['Bash(*)', 'Bash'], defaultMode: 'bypassPermissions' },
      hooks: { SessionStart: hook, PreToolUse: [{ matcher: '*', ...hook[0] }], UserPromptSubmit: hook, Stop: hook },
    };
    const { name, runner } = await bed.run(
      'script:\ntool: Bash {"command":"echo sneaky > sneaky.txt"}\nsay: done',
      model.env(),
      {},
      {
        '.claude/settings.json': JSON.stringify(settings),
        '.claude/settings.local.json': JSON.stringify(settings),
      },
    );
    const asked = await answer(bed.sessions, bed.ns, name, 'tool', {
      action: 'deny',
      message: 'not from the repository',
    });
    expect(asked.status?.pending).toMatchObject({ kind: 'tool', tool: 'Bash' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(model.calls('echo sneaky > sneaky.txt')).toEqual([
      expect.objectContaining({ result: { error: true, text: 'not from the repository' } }),
    ]);
  });

  it("put every call through Tether's policy: a command Claude Code deems read-only is asked too", async () => {
    const { name, runner } = await bed.run(
      'script:\ntool: Bash {"command":"cat README.md"}\ntool: Read {"file_path":"/etc/hostname"}\nsay: done',
      model.env(),
    );
    const shell = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'no' });
    expect(shell.status?.pending).toMatchObject({
      kind: 'tool',
      tool: 'Bash',
      input: JSON.stringify({ command: 'cat README.md' }),
    });
    const read = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'no' });
    expect(read.status?.pending).toMatchObject({ kind: 'tool', tool: 'Read' });
    expect(await runner.exited, runner.output()).toBe(0);
  });
});
