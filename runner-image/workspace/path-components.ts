// Paths as workspace-fs (fs.ts) takes them: relative, split into single components, never `..`;
// and the error for whatever it will not follow or open. Nothing here touches the file system.

/** A path the supervisor will not follow or open: a symlink, a special file, `..`, or too large. */
export class WorkspaceRefused extends Error {
  readonly path: string;
  /** Why, in a few plain words (no path): for a message to the user. */
  readonly why: string;
  constructor(path: string, why: string) {
    super(`refused ${JSON.stringify(path)} in the workspace: ${why}`);
    this.path = path;
    this.why = why;
  }
}

export type EntryType = 'file' | 'dir' | 'symlink' | 'other';

export interface Entry {
  name: string;
  type: EntryType;
}

/** The components of a relative path; `..`, `.`, NUL and absolute paths are refused, empty ones skipped. */
export function components(rel: string): string[] {
  if (rel.startsWith('/')) throw new WorkspaceRefused(rel, 'an absolute path');
  const parts = rel.split('/').filter((part) => part !== '');
  for (const part of parts) {
    if (part === '..' || part === '.' || part.includes('\0'))
      throw new WorkspaceRefused(rel, `the component ${JSON.stringify(part)}`);
  }
  return parts;
}
