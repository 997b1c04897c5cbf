// Runs inside a Pod's network namespace (as root, started by pod-network.ts): for each argument
// `<loopback address>:<port>=<unix socket>` listens on that port of both loopbacks (127.0.0.1 and ::1:
// `localhost` may be either, and the agent shares the namespace, so it must not hold the other) and
// joins every connection to that socket, which the node agent, outside, joins to the host's given
// address and port. It only carries bytes. Prints `ready` once every port listens.
import { createConnection, createServer } from 'node:net';
import { joinSockets } from './byte-pipe.ts';

const forwards = process.argv.slice(2).map((arg) => {
  const match = /^(127\.0\.0\.1|::1):(\d{1,5})=(\/.+)$/.exec(arg);
  if (!match) throw new Error(`netns-forward: "${arg}" is not <127.0.0.1|::1>:<port>=<unix socket path>`);
  return { host: match[1]!, port: Number(match[2]), socket: match[3]! };
});

const listen = (port: number, address: string, socket: string) =>
  new Promise<void>((resolve, reject) => {
    createServer((client) => joinSockets(client, createConnection(socket)))
      .once('error', reject)
      .listen(port, address, resolve);
  });

/** ::1 too, unless the namespace has no IPv6 at all (then nobody in it can take that port either). */
const listenV6 = (port: number, socket: string) =>
  listen(port, '::1', socket).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRNOTAVAIL' && error.code !== 'EAFNOSUPPORT') throw error;
  });

await Promise.all(forwards.flatMap(({ port, socket }) => [listen(port, '127.0.0.1', socket), listenV6(port, socket)]));
process.stdout.write('ready\n');
