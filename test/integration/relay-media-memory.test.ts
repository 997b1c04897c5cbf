// Bad input against the real relay process and the real API server: 100 concurrent unauthenticated
// 5 MB uploads, then oversized uploads (declared and undeclared), leave the relay's memory flat —
// its resident set grows by at most RSS_GROWTH_LIMIT while 500 MB and more are offered.
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RELAY_UPLOAD_PATH } from '../../common/session/names.ts';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { startManaged, untilHttpOk, type Managed } from '../../local/control-plane/processes.ts';
import { deleteNamespace, runnerRelayToken, sessionNamespace } from '../support/cluster.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

const MB = 1024 * 1024;
const MAX_BYTES = 5 * MB;
/**
 * The bound this test holds: the relay's resident set may grow by this much under each attack.
 * Buffering the bodies would add ≈500 MB; socket buffers and late GC under load have reached 77 MB.
 */
const RSS_GROWTH_LIMIT = 128 * MB;
const CHUNK = Buffer.alloc(MB, 0x41);

let kc: KubeConfig;
let ns: string;
let relay: Managed;
let port: number;
let output = '';

const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${relay.child.pid}/status`, 'utf8'))![1]) * 1024;

beforeAll(async () => {
  ({ kc, ns } = await sessionNamespace('relay-memory'));
  port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'relay-memory-'));
  relay = startManaged('relay', process.execPath, [join(process.cwd(), 'relay/main.ts')], join(dir, 'relay.log'), {
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: inject('kubeconfig'),
      PUBLIC_URL: 'https://tether.test',
      TETHER_NAMESPACE: ns,
      TETHER_REPO_URL: 'https://github.com/acme/web.git',
      RELAY_WEB_CHAT_TOKEN: 'chat-token-0123456789',
      RELAY_PORT: String(port),
      RELAY_MEDIA_SIGNING_KEY: 'test-signing-key-0123456789abcdef',
      TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
      RELAY_MEDIA_DIR: mkdtempSync(join(dir, 'media-')),
      RELAY_BIND_ADDRESS: '127.0.0.1',
      RELAY_MEDIA_MAX_BYTES: String(MAX_BYTES),
      TETHER_LOG_LEVEL: 'error',
      // Every request reaches the token check: the rate limit is not what keeps memory flat here.
      RELAY_UPLOAD_RATE: '10000',
    },
    onLine: (line) => (output += `${line}\n`),
  });
  await untilHttpOk(`http://127.0.0.1:${port}/readyz`, relay, 30_000, 200);
}, 60_000);
afterAll(async () => {
  relay?.signal('SIGKILL');
  await relay?.exited;
  await deleteNamespace(kc, ns);
});

interface Attempt {
  status: number;
  sentBytes: number;
}

/** Sends up to `bytes` of body (1 MB at a time, as fast as the relay takes it); stops when the relay answers. */
function offer(path: string, bytes: number, headers: Record<string, string | number>): Promise<Attempt> {
  return new Promise((resolve) => {
    let sentBytes = 0;
    let answered = false;
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path,
      headers: { 'content-type': 'image/png', ...headers },
    });
    const finish = (status: number) => {
      if (!answered) resolve({ status, sentBytes });
      answered = true;
      req.destroy();
    };
    req.on('response', (res) => finish(res.statusCode!)).on('error', () => finish(0));
    void (async () => {
      while (sentBytes < bytes && !answered) {
        const piece = CHUNK.subarray(0, Math.min(MB, bytes - sentBytes));
        sentBytes += piece.length;
        if (!req.write(piece)) await Promise.race([once(req, 'drain'), once(req, 'close')]);
      }
      if (!answered) req.end();
    })().catch(() => finish(0));
  });
}

/** Runs the attack while sampling the relay's resident set every 20 ms; returns its growth over the baseline. */
async function peakGrowth<T>(attack: () => Promise<T>): Promise<{ result: T; growth: number }> {
  await new Promise((r) => setTimeout(r, 500));
  const baseline = rss();
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
  try {
    const result = await attack();
    peak = Math.max(peak, rss());
    return { result, growth: peak - baseline };
  } finally {
    clearInterval(sampler);
  }
}

describe('relay memory under bad uploads (real relay process, real API server)', () => {
  it('stays flat under 100 concurrent unauthenticated 5 MB uploads, each refused before its body is read', async () => {
    // The same 100 requests with 64 KB bodies first: what the relay needs for 100 connections and
    // 50 TokenReviews is in the baseline; what is measured is what the 500 MB of bodies add.
    const attack = (bytes: number, round: string) =>
      Promise.all(
        [...Array(100)].map((_, i) =>
          offer(`${RELAY_UPLOAD_PATH}/${ns}/victim-${i % 10}/diff.png`, bytes, {
            'content-length': bytes,
            ...(i % 2 ? { authorization: `Bearer forged-token-${round}-${i}` } : {}),
          }),
        ),
      );
    const statuses = (attempts: Attempt[]) => attempts.map((a) => a.status).sort();
    expect(statuses(await attack(64 * 1024, 'warm-up'))).toEqual([...Array(50).fill(401), ...Array(50).fill(403)]);
    const { result, growth } = await peakGrowth(() => attack(MAX_BYTES, 'measured'));
    console.log(
      `[relay-memory] 100 × 5 MB unauthenticated: RSS +${(growth / MB).toFixed(1)} MB, the clients wrote ` +
        `${(result.reduce((n, a) => n + a.sentBytes, 0) / MB).toFixed(0)} MB before their answers`,
    );
    expect(statuses(result)).toEqual([...Array(50).fill(401), ...Array(50).fill(403)]);
    expect(growth).toBeLessThan(RSS_GROWTH_LIMIT);
  }, 120_000);

  it(`stays flat under oversized uploads: declared sizes refused \
at once, undeclared ones cut off at the limit`, async () => {
    const tokens = await Promise.all(
      ['big-1', 'big-2', 'big-3', 'big-4'].map(async (s) => [s, await runnerRelayToken(kc, ns, s)] as const),
    );
    const { result, growth } = await peakGrowth(() =>
      Promise.all([
        ...[...Array(40)].map((_, i) =>
          offer(`${RELAY_UPLOAD_PATH}/${ns}/${tokens[i % 4]![0]}/diff.png`, 50 * MB, {
            'content-length': 50 * MB,
            authorization: `Bearer ${tokens[i % 4]![1]}`,
          }),
        ),
        ...tokens.map(([session, token]) =>
          offer(`${RELAY_UPLOAD_PATH}/${ns}/${session}/shot.png`, 20 * MB, { authorization: `Bearer ${token}` }),
        ),
      ]),
    );
    console.log(
      `[relay-memory] 40 declared 50 MB + 4 undeclared 20 MB uploads with valid tokens: RSS ` +
        `+${(growth / MB).toFixed(1)} MB`,
    );
    const statuses = result.map((a) => a.status);
    expect(statuses.slice(0, 40)).toEqual(Array(40).fill(413));
    expect(statuses.slice(40)).toEqual(Array(4).fill(413));
    expect(growth).toBeLessThan(RSS_GROWTH_LIMIT);
    expect(output).not.toMatch(/"level":(50|60)/);
  }, 120_000);
});
