// The supervisor's model proxy: the agent container's Claude Code holds a dummy key; the proxy puts
// the real one in its place on the way to the API, streams the answer back, and never logs the key.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startModelProxy, type ModelProxy } from '../../runner-image/model-proxy.ts';

const KEY = 'sk-ant-canary-proxy-7f3a';
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Seen { path?: string; headers?: IncomingHttpHeaders; body?: string }

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
  closers.push(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/gateway`;
}

async function proxyTo(url: string, logged: string[]): Promise<ModelProxy> {
  const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _e, done) => done(void logged.push(chunk.toString())) }));
  const proxy = await startModelProxy({ upstream: url, apiKey: KEY, log });
  closers.push(() => proxy.close());
  return proxy;
}

describe('model proxy', () => {
  it('replaces the caller\'s credential with the key, keeps the path, and streams the answer', async () => {
    const seen: Seen = {};
    let release!: () => void;
    const logged: string[] = [];
    const proxy = await proxyTo(await upstream(seen, new Promise((resolve) => (release = resolve))), logged);
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await fetch(`${proxy.url}/v1/messages?beta=true`, {
      method: 'POST', body: '{"model":"m"}',
      headers: { 'x-api-key': 'dummy', authorization: 'Bearer dummy', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('event: message_start\n\n'); // before the upstream ended
    release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('event: message_stop\n\n');
    expect(seen).toMatchObject({ path: '/gateway/v1/messages?beta=true', body: '{"model":"m"}' });
    expect(seen.headers).toMatchObject({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
    expect(seen.headers).not.toHaveProperty('authorization');
    expect(logged.join('')).not.toContain(KEY);
  });

  it('answers 502 in the API\'s error shape when the API cannot be reached, without the key', async () => {
    const logged: string[] = [];
    const proxy = await proxyTo('http://127.0.0.1:9', logged);
    const response = await fetch(`${proxy.url}/v1/messages`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(logged.join('')).toContain('model call failed');
    expect(logged.join('')).not.toContain(KEY);
  });
});
