// Attack (root, as CI runs the local stack): every connection into a carried port costs the node agent two
// descriptors (the Unix socket it accepts, the connection it opens to the host's port), with no limit per
// Pod, while the agent spends one. The Pod's forwarder, with the same limit, stops B at about half of it;
// the node agent, with its other work, runs out first. Holding open connections — to a listener that lets
// them wait, as the relay does for headers — one Pod's agent uses up the node agent's descriptors, and every
// other Pod's carried connection (its API server, relay and egress proxy) is refused. Here the node agent's side is
// this process, its descriptor limit set to what one agent process may itself open.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;
/** The node agent's descriptor limit here: what one agent process may itself open (both inherit it). */
const LIMIT = 2048;
const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--no-new-privs'];
/** A host listener of its own process: answers a request, lets a silent connection wait. */
const LISTENER = `require('net').createServer((s) => s.on('data', () => s.end('HTTP/1.0 200 OK\\r\\n\\r\\nok')))
  .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
/**
 * The node agent's part: two Pods' networks carrying the port, closed when stdin ends, and BUSY descriptors
 * held as a node agent holds them for its other work (each Pod's logs, informers, its Pods' connections).
 */
const BUSY = 200;
const NODE = `import { openSync } from 'node:fs';
import { openPodNetwork } from ${JSON.stringify(join(import.meta.dirname, '../../local/node-agent/pod-network.ts'))};
const [port, dir] = [Number(process.argv[1]), process.argv[2]];
const pod = (uid) => ({ metadata: { name: 'runner-' + uid, namespace: 'ns', uid } });
const nets = [];
for (const uid of ['cccccccc-0000-4000-8000-000000000003', 'dddddddd-0000-4000-8000-000000000004'])
  nets.push(await openPodNetwork(pod(uid), [{ host: '127.0.0.1', port }], dir + '/' + uid + '.log'));
for (let i = 0; i < ${BUSY}; i++) openSync('/dev/null', 'r');
console.log(JSON.stringify(nets.map((n) => n.path)));
process.stdin.resume().on('end', async () => { for (const n of nets) await n.close(); process.exit(0); });`;
/** The agent: opens n connections to the port and holds them, silent. */
const HOLDER = `import socket, sys, time
held = [socket.create_connection(('127.0.0.1', int(sys.argv[1]))) for _ in range(int(sys.argv[2]))]
print('held', flush=True)
time.sleep(600)`;

const dir = mkdtempSync(join(tmpdir(), 'tether-attack-fds-'));
const children: ChildProcess[] = [];
let node: ChildProcess;
let port: number;
let paths: [string, string];

const firstLine = async (child: ChildProcess) => String((await once(child.stdout!, 'data'))[0]).trim();
const curl = (path: string) =>
  run('nsenter', [`--net=${path}`, ...NOBODY, 'curl', '-s', '-m', '10', `http://127.0.0.1:${port}/`]).then(
    ({ stdout }) => stdout,
    (error: { stdout: string }) => error.stdout,
  );

describe.skipIf(!asRoot)("one Pod's agent and the node agent's descriptors (local stack, root)", () => {
  beforeAll(async () => {
    const listener = spawn(process.execPath, ['-e', LISTENER], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(listener);
    port = Number(await firstLine(listener));
    node = spawn(
      'prlimit',
      [`--nofile=${LIMIT}:${LIMIT}`, process.execPath, '--input-type=module', '-e', NODE, String(port), dir],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    paths = JSON.parse(await firstLine(node)) as [string, string];
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    node?.stdin!.end();
    if (node) await once(node, 'exit');
  });

  it("B's held connections leave A's carried port working", async () => {
    const [a, b] = paths;
    expect(await curl(a)).toBe('ok');
    const holder = spawn('prlimit', [
      `--nofile=${LIMIT}:${LIMIT}`,
      'nsenter',
      `--net=${b}`,
      ...NOBODY,
      '/usr/bin/python3',
      '-c',
      HOLDER,
      String(port),
      String(LIMIT / 2 + 100),
    ]);
    children.push(holder);
    expect(await firstLine(holder)).toBe('held');
    expect(await curl(a)).toBe('ok');
  });
});
