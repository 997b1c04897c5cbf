// Runs inside a Pod's network namespace (as root, started by pod-network.ts): for each argument
// `<loopback address>:<port>=<unix socket>` listens on that address and port and joins every
// connection to that socket, which the node agent, outside, joins to the host's same address and
// port. It only carries bytes. Prints `ready` once every port listens.
import { createConnection, createServer } from 'node:net';
import { joinSockets } from './byte-pipe.ts';

const forwards = process.argv.slice(2).map((arg) => {
  const match = /^(127\.0\.0\.1|::1):(\d{1,5})=(\/.+)$/.exec(arg);
  if (!match) throw new Error(`netns-forward: "${arg}" is not <127.0.0.1|::1>:<port>=<unix socket path>`);
  return { host: match[1]!, port: Number(match[2]), socket: match[3]! };
});

await Promise.all(
  forwards.map(
    ({ host, port, socket }) =>
      new Promise<void>((resolve, reject) => {
        createServer((client) => joinSockets(client, createConnection(socket)))
          .once('error', reject)
          .listen(port, host, resolve);
      }),
  ),
);
process.stdout.write('ready\n');
