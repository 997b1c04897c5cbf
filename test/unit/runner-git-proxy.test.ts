// The supervisor's git through the Pod's proxy: the runner's HTTPS_PROXY/NO_PROXY reach the real git
// (curl reads them in lower case), and loopback never goes through the proxy.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { parseConfig } from '../../runner-image/config.ts';
import { spawnGit } from '../../runner-image/git/spawn.ts';
import { startRefusingProxy, type RefusingProxy } from '../support/refusing-proxy.ts';

const base = { TETHER_SESSION_NAME: 'abc-20261122083000-k3x9', TETHER_SESSION_NAMESPACE: 'tether' };
let proxy: RefusingProxy;
let store: string;
beforeAll(async () => {
  proxy = await startRefusingProxy();
  store = mkdtempSync(join(tmpdir(), 'git-proxy-'));
});
afterAll(async () => {
  await proxy.close();
  rmSync(store, { recursive: true, force: true });
});

async function lsRemote(url: string, env: Record<string, string>): Promise<string> {
  const config = parseConfig({ ...base, ...env });
  const git = spawnGit(['ls-remote', url], {
    gitDir: null,
    path: process.env.PATH!,
    storeDir: store,
    author: config.gitAuthor,
    redact: makeRedactor(),
    proxy: config.gitProxy,
  });
  return git.done.then(
    () => 'ok',
    (error: Error) => error.message,
  );
}

describe("the runner's git and the Pod's proxy", () => {
  it('sends a forge request through HTTPS_PROXY, and loopback past it', async () => {
    const failed = await lsRemote('https://git.example.invalid/acme/web.git', { HTTPS_PROXY: proxy.url });
    expect(failed).toMatch(/git ls-remote failed/);
    expect(proxy.attempts).toEqual(['CONNECT git.example.invalid:443']);

    await lsRemote('http://127.0.0.1:9/acme/web.git', { HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url });
    expect(proxy.attempts).toEqual(['CONNECT git.example.invalid:443']);
  });

  it('goes direct without a proxy', async () => {
    expect(parseConfig(base).gitProxy).toEqual({});
    expect(parseConfig({ ...base, HTTP_PROXY: 'http://proxy.example:3128', NO_PROXY: '.svc' }).gitProxy).toEqual({
      http_proxy: 'http://proxy.example:3128',
      no_proxy: '.svc,127.0.0.1,localhost',
    });
  });
});
