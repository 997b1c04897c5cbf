// Searching a folder tree for secrets, as `grep -r` would: every regular file, symlinks not followed.
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Paths of the files under root whose bytes contain any of the needles. */
export function filesContaining(root: string, needles: string[]): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
    else if (stat.isFile()) {
      const bytes = readFileSync(path);
      if (needles.some((n) => bytes.includes(n))) found.push(path);
    }
  };
  walk(root);
  return found;
}
