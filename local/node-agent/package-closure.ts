// The npm packages an image installs: the given packages and everything they depend on, found as
// Node finds them (nearest node_modules first) in package-lock.json's layout, which `npm ci` gave
// the checkout. A dependency counts when the checkout has it and it is not dev-only, as in
// `npm ci --omit=dev --include=optional`: platform packages of other machines and unmet optional
// peers are left out because they are not installed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  dev?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** Where a package required from the package at `from` ('' for the root) lies, in the lockfile's keys. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
    const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (packages[key]) return key;
    if (!dir) return undefined;
  }
}

/** The folders (relative to `root`, e.g. `node_modules/pino`) of `names` and their dependencies. */
export function packageClosure(root: string, names: readonly string[]): string[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages?: Record<string, LockEntry>;
  };
  const packages = lock.packages ?? {};
  const found = new Set<string>();
  const visit = (from: string, name: string, required: boolean) => {
    const key = resolveIn(packages, from, name);
    const installed = key !== undefined && !packages[key]!.dev && existsSync(join(root, key));
    if (!installed) {
      if (required)
        throw new Error(`${name} (needed by ${from || 'package.json'}) is not installed in ${root}: run npm ci`);
      return;
    }
    if (found.has(key)) return;
    found.add(key);
    const entry = packages[key]!;
    for (const dep of Object.keys(entry.dependencies ?? {})) visit(key, dep, true);
    for (const dep of Object.keys({ ...entry.optionalDependencies, ...entry.peerDependencies })) visit(key, dep, false);
  };
  for (const name of names) visit('', name, true);
  return [...found].sort();
}
