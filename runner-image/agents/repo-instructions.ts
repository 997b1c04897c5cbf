// The repository's CLAUDE.md, which the runner reads on the agent's behalf (no settings source is
// read, so Claude Code would not): through workspace-fs, so it is only ever a regular file of the
// checkout the agent itself could read. A symlink is followed only to a file of the checkout named
// without `..` (`CLAUDE.md -> AGENTS.md`); anything else — a link out of the checkout, a FIFO, a
// device, a file over the size limit — is left out, and the caller says why.
import { relative } from 'node:path';
import { components, readWorkspaceFile, withWorkspaceDir, WorkspaceRefused } from '../workspace/fs.ts';

/** How much of the repository's CLAUDE.md reaches the model. */
export const REPO_INSTRUCTIONS_MAX_CHARS = 20_000;
/** A larger CLAUDE.md is not read at all. */
export const REPO_INSTRUCTIONS_MAX_BYTES = 1024 * 1024;
const NAME = 'CLAUDE.md';

/** The text to give the model, or why the file was left out; undefined when there is none. */
export type RepoInstructions = { text: string } | { leftOut: string } | undefined;

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** `checkout` is below `workspace`, the trusted root (the volume's mount point). */
export async function readRepoInstructions(workspace: string, checkout: string): Promise<RepoInstructions> {
  const rel = relative(workspace, checkout);
  try {
    const data = await withWorkspaceDir(workspace, rel, async (dir) => {
      if ((await dir.typeOf(NAME)) !== 'symlink') return (await dir.readFile(NAME, REPO_INSTRUCTIONS_MAX_BYTES))?.data;
      const target = await dir.readLink(NAME);
      try {
        components(target);
      } catch {
        throw new WorkspaceRefused(`${dir.path}/${NAME}`, 'a symlink leading out of the checkout');
      }
      return (await readWorkspaceFile(workspace, [rel, target].filter(Boolean).join('/'), REPO_INSTRUCTIONS_MAX_BYTES))
        ?.data;
    });
    const text = data?.toString('utf8').slice(0, REPO_INSTRUCTIONS_MAX_CHARS);
    return text?.trim() ? { text } : undefined;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    if (error instanceof WorkspaceRefused) return { leftOut: error.why };
    return { leftOut: `it could not be read: ${errorCode(error) ?? (error as Error).message}` };
  }
}
