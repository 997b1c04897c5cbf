// Reading the project's Dockerfiles and what each component imports, for the Dockerfile tests.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Instructions with line continuations joined, runs of spaces folded and comments dropped. */
export function instructions(path: string): string[] {
  return readFileSync(path, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '))
    .filter((l) => l && !l.startsWith('#'));
}

/** The instructions of one keyword (FROM, RUN, COPY…). */
export const ofKeyword = (lines: string[], keyword: string) =>
  lines.filter((l) => l.toUpperCase().startsWith(`${keyword} `));

/** npm packages reachable through static and dynamic imports from the entries (relative imports followed). */
export function importedPackages(...entries: string[]): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(
      new RegExp(
        /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|/.source +
          /^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/.source,
        'gm',
      ),
    )) {
      const spec = (m[1] ?? m[2] ?? m[3])!;
      if (spec.startsWith('.')) walk(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:'))
        packages.add(
          spec
            .split('/')
            .slice(0, spec.startsWith('@') ? 2 : 1)
            .join('/'),
        );
    }
  };
  for (const entry of entries) walk(resolve(entry));
  return packages;
}

/** The package names of the `npm uninstall` in a RUN instruction. */
export function uninstalled(run: string): string[] {
  return run
    .slice(run.indexOf('npm uninstall'))
    .split(' && ')[0]!
    .split(' ')
    .filter((w) => !w.startsWith('-') && w !== 'npm' && w !== 'uninstall');
}

/** npm in the build gets the machine's CA bundle only as an optional build secret, never in a layer. */
export function caBundleIsAnOptionalSecret(lines: string[]): boolean {
  const npmRuns = ofKeyword(lines, 'RUN').filter((l) => /\bnpm ci\b/.test(l));
  return (
    npmRuns.length > 0 &&
    npmRuns.every(
      (l) =>
        l.startsWith('RUN --mount=type=secret,id=ca_bundle,required=false ') &&
        l.includes('if [ -f /run/secrets/ca_bundle ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca_bundle; fi'),
    ) &&
    !lines.some((l) => /^(ENV|ARG|COPY|ADD) .*(NODE_EXTRA_CA_CERTS|ca_bundle|ca-certificates\.crt)/i.test(l))
  );
}
