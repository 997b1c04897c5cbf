// Attack (root, as CI runs the local stack): every runner Pod's network is its own, but each carried port
// reaches the host through the node agent, so the relay sees every Pod — each phone's agent and supervisor —
// as the one source 127.0.0.1. The relay's media routes limit requests per source address before any token
// is checked (RELAY_UPLOAD_RATE, 30 a minute by default): phone B's agent, with no token at all, spends the
// bucket and phone A's supervisor is refused the picture of its own Session. In a cluster each Pod has an
// address of its own and B spends only its own bucket.
import type { V1Pod } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPodNetwork, type PodNetwork } from '../../local/node-agent/pod-network.ts';
import { RELAY_ENV } from '../../relay/config-schema.ts';
import { MediaStore } from '../../relay/media/store.ts';
import { startMediaRelay } from '../support/media-relay.ts';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;
const RATE = RELAY_ENV.properties.RELAY_UPLOAD_RATE.default as number;
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100, 1)]);
const NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups', '--no-new-privs'];

const dir = mkdtempSync(join(tmpdir(), 'tether-attack-source-'));
let relay: { url: string; close(): Promise<void> };
const networks: PodNetwork[] = [];

const pod = (uid: string) => ({ metadata: { name: `runner-${uid}`, namespace: 'ns', uid } }) as V1Pod;

/**
 * curl's status code for a GET from inside a Pod's network, as an unprivileged uid (an agent); never
 * synchronous: the carried port's host side is this process's.
 */
async function getFrom(network: PodNetwork, path: string, token?: string): Promise<number> {
  const auth = token ? ['-H', `authorization: Bearer ${token}`] : [];
  const { stdout } = await run('nsenter', [
    `--net=${network.path}`,
    'setpriv',
    ...NOBODY,
    'curl',
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    ...auth,
    `${relay.url}${path}`,
  ]);
  return Number(stdout);
}

describe.skipIf(!asRoot)("one Pod's agent and another Pod's relay reads (local stack, root)", () => {
  beforeAll(async () => {
    const media = new MediaStore({ dir, maxBytes: 4096, ttlMs: 600_000 });
    await media.put('ns/session-a/photo.png', 'image/png', PNG);
    relay = await startMediaRelay(media, RATE);
    const port = Number(new URL(relay.url).port);
    for (const uid of ['aaaaaaaa-0000-4000-8000-000000000001', 'bbbbbbbb-0000-4000-8000-000000000002'])
      networks.push(await openPodNetwork(pod(uid), [{ host: '127.0.0.1', port }], join(dir, `${uid}.log`)));
  });

  afterAll(async () => {
    for (const network of networks) await network.close();
    await relay?.close();
  });

  it("B's tokenless requests do not spend A's supervisor's reads of its own Session's picture", async () => {
    const [a, b] = networks as [PodNetwork, PodNetwork];
    const refusedB: number[] = [];
    for (let i = 0; i <= RATE; i++) refusedB.push(await getFrom(b, '/uploads/ns/session-b/x.png'));
    expect(refusedB.slice(0, RATE).every((status) => status === 401)).toBe(true);
    expect(refusedB.at(-1)).toBe(429);
    expect(await getFrom(a, '/uploads/ns/session-a/photo.png', 'runner:session-a')).toBe(200);
  });
});
