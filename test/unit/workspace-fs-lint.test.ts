// The lint rule behind "the supervisor touches the workspace only through workspace-fs": a file of
// runner-image/ that imports fs fails `eslint` unless eslint.config.js names it, with its reason,
// in WORKSPACE_FS_ALLOWED; and that list names no file that does not need it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: root });

const ruleOf = async (file: string) => {
  const config = (await eslint.calculateConfigForFile(file)) as { rules?: Record<string, unknown> };
  const rule = config.rules?.['no-restricted-imports'];
  return Array.isArray(rule) ? rule[0] : rule;
};

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : entry.name.endsWith('.ts') ? [relative(root, path)] : [];
  });

const IMPORTS_FS = /from '(node:)?fs(\/promises)?'/;

describe('no fs in runner-image/ outside workspace-fs', () => {
  it.each([
    "import { readFile } from 'node:fs/promises';",
    "import { readFileSync } from 'node:fs';",
    "import * as fs from 'fs';",
    "import { writeFile } from 'fs/promises';",
  ])('a new supervisor file with %s fails lint', async (line) => {
    const [result] = await eslint.lintText(`${line}\nexport const x = 1;\n`, {
      filePath: join(root, 'runner-image/a-new-reader.ts'),
    });
    expect(result!.messages.map((m) => m.ruleId)).toContain('no-restricted-imports');
    expect(result!.messages[0]!.message).toMatch(/only through runner-image\/workspace\/fs\.ts/);
  });

  it('the allowlist names exactly the supervisor files that import fs', async () => {
    const supervisor = filesUnder(join(root, 'runner-image')).filter(
      (file) => !file.startsWith('runner-image/agent-host/'),
    );
    const allowed = [];
    for (const file of supervisor) if ([0, 'off'].includes((await ruleOf(file)) as number)) allowed.push(file);
    const importing = supervisor.filter((file) => IMPORTS_FS.test(readFileSync(join(root, file), 'utf8')));
    expect(allowed.sort()).toEqual(importing.sort());
    expect(allowed).toContain('runner-image/workspace/fs.ts');
    expect(allowed).not.toContain('runner-image/agents/claude-options.ts');
    // The agent host runs as the agent's own user: any file of it may.
    const [agentHost] = await eslint.lintText(
      "import { readFile } from 'node:fs/promises';\nexport const r = readFile;\n",
      { filePath: join(root, 'runner-image/agent-host/a-new-part.ts') },
    );
    expect(agentHost!.messages).toEqual([]);
  });
});
