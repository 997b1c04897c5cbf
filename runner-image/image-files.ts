// Files of the runner image itself (its code and installed packages: read-only in a Pod and on no
// volume the agent can write), as opposed to anything on the workspace (workspace/fs.ts).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** The image's CLAUDE.md: the instructions Tether gives Claude Code (the progress and screenshot tools). */
export const imageInstructions = (): string => readFileSync(new URL('./CLAUDE.md', import.meta.url), 'utf8');

/** A file of a package the image installed, by its module specifier. */
export const packageFile = (specifier: string): Promise<string> =>
  readFile(createRequire(import.meta.url).resolve(specifier), 'utf8');
