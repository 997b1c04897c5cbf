// Where a path really leads, as the kernel would open it: symlinks (dangling ones too) and `..`
// after a symlink are followed, for paths that may not exist yet. Text alone is not enough: a
// symlink inside the repository can point anywhere.
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';

const MAX_LINKS = 40; // as Linux's MAXSYMLINKS

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** realpath of the nearest existing ancestor and the components below it; undefined when unresolvable. */
function nearestExisting(path: string): { real: string; rest: string[] } | undefined {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    try {
      // .native: the kernel's realpath, which applies `..` after a symlink as open(2) does.
      return { real: realpathSync.native(current), rest };
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTDIR') return undefined;
    }
    const trimmed = current.replace(/\/+$/, '');
    const slash = trimmed.lastIndexOf('/');
    if (slash < 0 || trimmed === '') return undefined;
    rest.unshift(trimmed.slice(slash + 1));
    current = trimmed.slice(0, slash) || '/';
  }
}

const linkTarget = (path: string): string | undefined => {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : undefined;
  } catch {
    return undefined;
  }
};

/**
 * The absolute path `path` (relative to `base`) leads to. Undefined when it cannot be known:
 * a symlink loop, a directory it may not look into, or a `~` the tool would expand itself.
 */
export function realPath(path: string, base: string): string | undefined {
  if (path.startsWith('~')) return undefined;
  let pending = isAbsolute(path) ? path : `${base}/${path}`;
  for (let links = 0; links <= MAX_LINKS; links++) {
    const found = nearestExisting(pending);
    if (!found) return undefined;
    const [first, ...below] = found.rest;
    if (first === undefined) return found.real;
    // The first missing component may be a dangling symlink: creating it creates its target.
    const target = first === '..' || first === '.' ? undefined : linkTarget(join(found.real, first));
    if (target === undefined) return join(found.real, ...found.rest);
    pending = [isAbsolute(target) ? target : `${found.real}/${target}`, ...below].join('/');
  }
  return undefined;
}

/** Whether `path` is `dir` or below it; both absolute and already resolved. */
export function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
