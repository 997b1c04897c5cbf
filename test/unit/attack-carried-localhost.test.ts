// Attack: a carried port held in the Pod's network on 127.0.0.1 alone leaves [::1] at that port free for the
// agent, which shares the network. A supervisor resolving `localhost` where the hosts file also maps it to ::1
// (most distributions; Node keeps the resolver's order and tries ::1 first) would send its relay token, its API
// server token or its egress password to the agent's listener. The forwarder holds the port on both loopbacks,
// whatever address the URL named.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const FORWARDER = join(import.meta.dirname, '../../local/node-agent/netns-forward.ts');
const children: ChildProcess[] = [];
afterAll(() => children.forEach((child) => child.kill('SIGKILL')));

const freePort = async () => {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  return port;
};

/** Whether this process may listen on address:port now: 'free', or the error's code. */
const tryListen = (port: number, address: string) =>
  new Promise<string>((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    server.listen(port, address, () => server.close(() => resolve('free')));
  });

const v6 = await tryListen(0, '::1');

describe('local node: the forwarder of a carried port', () => {
  it.skipIf(v6 !== 'free')('holds the port on ::1 as well as on 127.0.0.1', async () => {
    const port = await freePort();
    const socket = join(mkdtempSync(join(tmpdir(), 'tether-forward-')), 'sock');
    const child = spawn(process.execPath, [FORWARDER, `127.0.0.1:${port}=${socket}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    expect(String((await once(child.stdout!, 'data'))[0]).trim()).toBe('ready');
    expect({ v4: await tryListen(port, '127.0.0.1'), v6: await tryListen(port, '::1') }).toEqual({
      v4: 'EADDRINUSE',
      v6: 'EADDRINUSE',
    });
  });
});
