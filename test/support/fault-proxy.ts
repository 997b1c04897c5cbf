// A plain-HTTP proxy in front of the real API server (authenticating as admin) that can
// break watches on purpose: drop connections, freeze streams, or answer a watch with 410.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request, type RequestOptions } from 'node:https';
import type { Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export interface FaultProxy {
  kubeConfig: KubeConfig;
  /** Requests seen, e.g. "GET /api/v1/namespaces/x/configmaps?watch=1&…". */
  requests: string[];
  /** Destroys every open connection (watches fail with a transport error). */
  dropAll(): void;
  /** While frozen, watch streams stay open but forward nothing. */
  freeze(on: boolean): void;
  /** The next watch request gets one ERROR event with code 410 and ends. */
  goneOnNextWatch(): void;
  /** Requests whose "METHOD url" matches reach the API server, but their answers are held until close. */
  holdAnswers(match: RegExp): void;
  close(): Promise<void>;
}

export async function startFaultProxy(admin: KubeConfig): Promise<FaultProxy> {
  const upstream = new URL(admin.getCurrentCluster()!.server);
  const base: RequestOptions = {};
  await admin.applyToHTTPSOptions(base);
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  let frozen = false;
  let gone = false;
  let held: RegExp | undefined;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const line = `${req.method} ${req.url}`;
    requests.push(line);
    const hold = held?.test(line) ?? false;
    const isWatch = /[?&]watch=(1|true)/.test(req.url ?? '');
    if (isWatch && gone) {
      gone = false;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          type: 'ERROR',
          object: {
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            message: 'too old resource version',
            reason: 'Expired',
            code: 410,
          },
        }) + '\n',
      );
      return;
    }
    const headers = { ...req.headers, ...base.headers } as Record<string, string>;
    delete headers.host;
    const out = request(
      {
        ...base,
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
      },
      (up) => {
        if (hold) {
          up.resume();
          return;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.on('data', (chunk: Buffer) => {
          if (!(isWatch && frozen)) res.write(chunk);
        });
        up.on('end', () => res.end());
        up.on('error', () => res.destroy());
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
    res.on('close', () => out.destroy());
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'proxy', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'proxy' }],
    contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy' }],
    currentContext: 'proxy',
  });

  return {
    kubeConfig,
    requests,
    dropAll: () => {
      for (const socket of sockets) socket.destroy();
    },
    freeze: (on) => {
      frozen = on;
    },
    goneOnNextWatch: () => {
      gone = true;
    },
    holdAnswers: (match) => {
      held = match;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
