// End to end: the runner's git store is a claim of the workspace's own (<claim>.git). A phone's next command, in a
// new runner Pod, finds the objects the first one fetched (the same files, not fetched again) and adds only the new
// commit's.
import { existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { plainGit } from '../support/plain-git.ts';

const NUMBER = '+14155550171';
let e2e: E2E;
beforeAll(async () => {
  // Every command on a Pod of its own (no live runner): the store must outlive the Pod.
  e2e = await startE2E({ numbers: [NUMBER], controllerEnv: { TETHER_RUNNER_KEEP_ALIVE: '0' } });
}, 90_000);
afterAll(async () => e2e?.stop());

const succeeded = (prompt: RegExp) =>
  eventually(async () => {
    const session = (await e2e.list()).find((s) => prompt.test(s.spec.prompt));
    expect(session?.status?.phase).toBe('Succeeded');
    return session!;
  }, 60_000);

/** Every loose object file of the store, by object id, with its inode. */
function objectFiles(store: string): Map<string, number> {
  const objects = join(store, 'objects');
  const files = new Map<string, number>();
  for (const dir of readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d)))
    for (const file of readdirSync(join(objects, dir))) files.set(dir + file, statSync(join(objects, dir, file)).ino);
  return files;
}

function pushUpstream(remote: string): string {
  const clone = mkdtempSync(join(tmpdir(), 'tether-e2e-upstream-'));
  plainGit(clone, 'clone', '--quiet', remote, '.');
  plainGit(clone, 'commit', '--quiet', '--allow-empty', '-m', 'upstream moved');
  plainGit(clone, 'push', '--quiet', 'origin', 'HEAD');
  return plainGit(clone, 'rev-parse', 'HEAD').trim();
}

describe('end to end: the git store outlives the runner Pod', () => {
  it(`keeps what the first command fetched for the next command's new Pod, which fetches only what is \
new`, async () => {
    const phone = e2e.phone(NUMBER);
    await phone.send('script:\nsay: first done');
    await phone.next(/first done/);
    const first = await succeeded(/first done/);
    const claim = `${first.spec.workspace}.git`;
    const store = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, claim, 'store.git');
    expect(existsSync(store)).toBe(true);
    const fetched = objectFiles(store);
    const base = plainGit(e2e.remote, 'rev-parse', 'main').trim();
    expect(fetched.has(base)).toBe(true);

    const tip = pushUpstream(e2e.remote);
    await phone.send('script:\nsay: second done');
    await phone.next(/second done/);
    const second = await succeeded(/second done/);
    expect(second.status?.podName).not.toBe(first.status?.podName);

    const after = objectFiles(store);
    // The first command's objects are the very same files: nothing of them was fetched again.
    for (const [id, inode] of fetched) expect(after.get(id), id).toBe(inode);
    expect(after.has(tip)).toBe(true);
    // The store is the runner's user's (the local node's ids): read as root, past git's ownership check.
    expect(plainGit(store, '-c', 'safe.directory=*', 'rev-parse', 'refs/tether/checkout-base').trim()).toBe(tip);
    const pvc = await e2e.kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedPersistentVolumeClaim({ name: claim, namespace: e2e.stack.runnerNamespace });
    expect(pvc.metadata?.labels).toMatchObject({
      'app.kubernetes.io/component': 'git-store',
      'tether.dev/workspace': first.spec.workspace,
    });
  });
});
