// *merge* says "merges a pull request whose head's checks all passed". GitHub has two kinds of checks:
// check runs (Actions, Apps) and commit statuses (the older API that many CI services still use).
// A repository whose CI reports a failing commit status, with one green check run beside it (any
// workflow — the agent's own branch can add one), is not green: *merge* must not merge it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { GitHubClient } from '../../relay/github/client.ts';
import { GitHubMerger } from '../../relay/github/merge.ts';
import { RecordsInMemory, pullRecord } from './github-fake.ts';

const HEAD = 'c'.repeat(40);
let dir: string;
let server: Server;
let url: string;
const puts: string[] = [];

/** GitHub for acme/web#5: one green check run, and the CI's commit status failing. */
function answer(method: string, path: string): [number, unknown] {
  if (method === 'PUT') {
    puts.push(path);
    return [200, { merged: true, sha: 'f'.repeat(40) }];
  }
  if (path === '/repos/acme/web/pulls/5')
    return [
      200,
      { number: 5, state: 'open', merged: false, mergeable: true, head: { sha: HEAD }, base: { ref: 'main' } },
    ];
  if (path.startsWith(`/repos/acme/web/commits/${HEAD}/check-runs`)) {
    const run = { id: 1, name: 'lint', status: 'completed', conclusion: 'success', head_sha: HEAD };
    return [200, { total_count: 1, check_runs: [run] }];
  }
  if (path.startsWith(`/repos/acme/web/commits/${HEAD}/status`)) {
    const status = { context: 'ci/jenkins', state: 'failure', description: '12 tests failed' };
    return [200, { state: 'failure', total_count: 1, statuses: [status], sha: HEAD }];
  }
  return [404, { message: 'Not Found' }];
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-merge-status-'));
  writeFileSync(join(dir, 'token'), 'relay-token');
  puts.length = 0;
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const [status, body] = answer(req.method!, req.url!);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('*merge* with a failing commit status', () => {
  it('is refused, naming the status; nothing is merged', async () => {
    const records = new RecordsInMemory();
    records.add(pullRecord(5));
    const client = new GitHubClient({ apiUrl: url, tokenFile: join(dir, 'token'), timeoutMs: 5000 }, makeRedactor());
    const reply = await new GitHubMerger(client, records).merge(pullRecord(5), { name: 'Ada', merge: true });
    expect(puts).toEqual([]);
    expect(reply).toMatch(/ci\/jenkins/);
  });
});
