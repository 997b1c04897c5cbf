// Runs inside a Pod's network namespace (as root, started by pod-network.ts): for each argument
// `<port>=<unix socket>` listens on 127.0.0.1:<port> and joins every connection to that socket, which
// the node agent, outside, joins to the host's 127.0.0.1:<port>. It only carries bytes. Prints
// `ready` once every port listens.
import { createConnection, createServer } from 'node:net';
import { joinSockets } from './byte-pipe.ts';

const forwards = process.argv.slice(2).map((arg) => {
  const match = /^(\d{1,5})=(\/.+)$/.exec(arg);
  if (!match) throw new Error(`netns-forward: "${arg}" is not <port>=<unix socket path>`);
  return { port: Number(match[1]), socket: match[2]! };
});

await Promise.all(
  forwards.map(
    ({ port, socket }) =>
      new Promise<void>((resolve, reject) => {
        createServer((client) => joinSockets(client, createConnection(socket)))
          .once('error', reject)
          .listen(port, '127.0.0.1', resolve);
      }),
  ),
);
process.stdout.write('ready\n');
