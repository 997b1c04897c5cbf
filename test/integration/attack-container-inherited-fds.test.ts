// Attack (root, as CI runs the local stack): a local container's process gets every descriptor the node
// agent itself inherited without close-on-exec — whatever started `make dev` or the tests left open (a CI
// runner's log pipe, a terminal, a lock) — not stdin, stdout and stderr alone as a container runtime gives
// it. The agent runs as its own uid, yet writes to (or reads from) what the descriptor is: here a file of
// root's, 0600, that the agent could not open. The node agent's process start is startManaged.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;
const dir = mkdtempSync(join(tmpdir(), 'tether-attack-inherit-'));
/**
 * The node agent, started with descriptor 200 open on root's file: starts a container as nobody, as a Pod's; exits
 * with the container's code (7: it ran).
 */
const PROCESSES = join(import.meta.dirname, '../../local/control-plane/processes.ts');
const NODE = `import { startManaged } from ${JSON.stringify(PROCESSES)};
const container = startManaged('probe', 'bash', ['-c', 'echo planted >&200; exit 7'], process.argv[1], {
  group: true,
  user: { uid: 65534, gid: 65534, groups: [] },
});
process.exit((await container.exited) ?? 1);`;

describe.skipIf(!asRoot)("a local container's descriptors", () => {
  it("holds none of the node agent's inherited descriptors", async () => {
    const [secret, log] = [join(dir, 'root-only'), join(dir, 'container.log')];
    const exit = await run('bash', [
      '-c',
      `umask 077; exec 200>>"$1"; exec "$2" --input-type=module -e "$3" "$4"`,
      'node-agent',
      secret,
      process.execPath,
      NODE,
      log,
    ]).then(
      () => 0,
      (error: { code: number }) => error.code,
    );
    expect(exit).toBe(7);
    expect(statSync(secret).mode & 0o777).toBe(0o600);
    expect(readFileSync(secret, 'utf8')).toBe('');
  });
});
