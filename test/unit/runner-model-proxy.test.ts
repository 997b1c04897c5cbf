// The supervisor's model proxy: the agent container's Claude Code holds a dummy key; the proxy puts
// the real one in its place on the way to the API, streams the answer back, and never logs the key.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { modelCallRefusal, startModelProxy, type ModelProxy } from '../../runner-image/model/proxy.ts';
import { ModelSpend } from '../../runner-image/model/spend.ts';

const KEY = 'sk-ant-canary-proxy-7f3a';
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Seen {
  path?: string;
  headers?: IncomingHttpHeaders;
  body?: string;
}

async function upstream(seen: Seen, release: Promise<void>): Promise<string> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      Object.assign(seen, { path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\n\n');
      void release.then(() => res.end('event: message_stop\n\n'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/gateway`;
}

async function proxyTo(url: string, logged: string[]): Promise<ModelProxy> {
  const log = pino(
    { level: 'debug' },
    new Writable({ write: (chunk: Buffer, _e, done) => done(void logged.push(chunk.toString())) }),
  );
  const proxy = await startModelProxy({ upstream: url, apiKey: KEY, log, spend: new ModelSpend() });
  closers.push(() => proxy.close());
  return proxy;
}

describe('model proxy', () => {
  it("replaces the caller's credential with the key, keeps the path, and streams the answer", async () => {
    const seen: Seen = {};
    let release!: () => void;
    const logged: string[] = [];
    const proxy = await proxyTo(await upstream(seen, new Promise((resolve) => (release = resolve))), logged);
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await fetch(`${proxy.url}/v1/messages?beta=true`, {
      method: 'POST',
      body: '{"model":"m"}',
      headers: {
        'x-api-key': 'dummy',
        authorization: 'Bearer dummy',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    // before the upstream ended
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('event: message_start\n\n');
    release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('event: message_stop\n\n');
    expect(seen).toMatchObject({ path: '/gateway/v1/messages?beta=true', body: '{"model":"m"}' });
    expect(seen.headers).toMatchObject({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
    expect(seen.headers).not.toHaveProperty('authorization');
    expect(logged.join('')).not.toContain(KEY);
  });

  it("answers 502 in the API's error shape when the API cannot be reached, without the key", async () => {
    const logged: string[] = [];
    const proxy = await proxyTo('http://127.0.0.1:9', logged);
    const response = await fetch(`${proxy.url}/v1/messages`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(logged.join('')).toContain('model call failed');
    expect(logged.join('')).not.toContain(KEY);
  });
});

describe('model proxy: what is forwarded', () => {
  const own = '127.0.0.1:40000';
  const post = (target: string, hosts = [own]) => ({ method: 'POST', target, hosts });

  it.each([
    '/v1/messages',
    '/v1/messages?beta=true',
    '/v1/messages/count_tokens',
    '/v1/messages/count_tokens?beta=true',
  ])("forwards Claude Code's call POST %s", (target) => {
    expect(modelCallRefusal(post(target), own)).toBeUndefined();
  });

  it.each([
    ['absolute form to another port', post('http://127.0.0.1:9/v1/messages')],
    ['absolute form to the proxy itself', post(`http://${own}/v1/messages`)],
    ['absolute form, https', post('https://attacker.example/v1/messages')],
    ['authority form', post('127.0.0.1:9')],
    ['asterisk form', post('*')],
    ['scheme-relative path', post('//127.0.0.1:9/v1/messages')],
    ['scheme-relative path to a name', post('//attacker.example/v1/messages')],
    ['dot-dot segments', post('/v1/messages/../../v1/messages')],
    ['a dot segment', post('/v1/./messages')],
    ['encoded dot-dot', post('/v1/%2e%2e/v1/messages')],
    ['encoded dot-dot, upper case', post('/v1/%2E%2E/v1/messages')],
    ['encoded slash', post('/v1%2Fmessages')],
    ['encoded double slash', post('/%2F%2F127.0.0.1:9/v1/messages')],
    ['user info', post('/@127.0.0.1:9/v1/messages')],
    ['an at sign in the path', post('/v1/messages@127.0.0.1:9')],
    ['backslashes', post('/\\127.0.0.1:9/v1/messages')],
    ['a backslash inside', post('/v1\\messages')],
    ['another query', post('/v1/messages?beta=true&x=1')],
    ['a URL in the query', post('/v1/messages?next=http://127.0.0.1:9/')],
    ['a fragment', post('/v1/messages#x')],
    ['a trailing slash', post('/v1/messages/')],
    ['another API', post('/v1/models')],
    ['message batches', post('/v1/messages/batches')],
    ['another case', post('/V1/messages')],
    ['a parameter', post('/v1/messages;x')],
    ['a NUL', post('/v1/messages%00')],
    ['the root', post('/')],
    ['a foreign Host', post('/v1/messages', ['127.0.0.1:9'])],
    ['localhost as Host', post('/v1/messages', ['localhost:40000'])],
    ['Host with user info', post('/v1/messages', [`x@${own}`])],
    ['no Host', post('/v1/messages', [])],
    ['two Hosts', post('/v1/messages', [own, '127.0.0.1:9'])],
    ['GET', { method: 'GET', target: '/v1/messages', hosts: [own] }],
    ['CONNECT', { method: 'CONNECT', target: '127.0.0.1:9', hosts: ['127.0.0.1:9'] }],
    ['OPTIONS', { method: 'OPTIONS', target: '/v1/messages', hosts: [own] }],
    ['PUT', { method: 'PUT', target: '/v1/messages', hosts: [own] }],
  ])('refuses %s', (_name, call) => {
    expect(modelCallRefusal(call, own)).toMatch(/./);
  });

  it('refuses at start an upstream with a user, a query or a fragment, without printing it', async () => {
    for (const upstream of [
      'https://user:secret@gw.example/anthropic',
      'https://gw.example/?secret=1',
      'https://gw.example/#secret',
      'ftp://gw.example/',
    ]) {
      await expect(
        startModelProxy({ upstream, apiKey: KEY, log: pino({ level: 'silent' }), spend: new ModelSpend() }),
      ).rejects.toThrow(/^(?!.*secret).*must be http\(s\) with no user/);
    }
  });
});
