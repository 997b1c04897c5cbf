// The store outlives its Pod (a claim of the workspace's own, controller/store-claim.ts): what a runner killed
// mid-command left there is cleared before this process's first git in it, and the commit the checkout was made from
// is recorded there, where the agent cannot write, rather than only on the workspace.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readBaseMarker, writeBaseMarker } from '../workspace/checkout.ts';

/** In the store: the commit the checkout was written from (the base of kept changes). */
export const BASE_REF = 'refs/tether/checkout-base';

type Run = (args: string[]) => Promise<string>;

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** Stores this process cleared: one runner process uses a store alone, one command at a time. */
const cleared = new Set<string>();

const isLock = (name: string) => name.endsWith('.lock');

/**
 * Lock files a killed git left (a ref's, packed-refs, shallow, config) — each would fail every later fetch of the
 * ref — and the scratch folder's leftovers (half-made clones and indexes). Once per process, before its first git
 * there (the store made): no other runner writes it meanwhile (its claim is mounted by one Pod of the workspace at a
 * time).
 */
export async function clearLeftovers(store: string, scratch: string): Promise<void> {
  if (cleared.has(store)) return;
  const top = await readdir(store);
  const refs = (await readdir(join(store, 'refs'), { recursive: true })).map((p) => join('refs', p));
  for (const path of [...top, ...refs].filter(isLock)) await rm(join(store, path), { force: true });
  for (const entry of await readdir(scratch)) await rm(join(scratch, entry), { recursive: true, force: true });
  cleared.add(store);
}

/** The base the store records, when it has one (a commit). */
async function recordedBase(run: Run): Promise<string | undefined> {
  const [type, id] = (await run(['for-each-ref', '--format=%(objecttype) %(objectname)', BASE_REF])).trim().split(' ');
  return type === 'commit' ? id : undefined;
}

/**
 * The base the kept work tree was made from, as the store records it — the workspace's record (which the agent can
 * write) only when the store has none, a store made after its workspace — and only a commit one of the fetched tips
 * contains.
 */
export async function keptBase(run: Run, workspace: string, tips: string[]): Promise<string | undefined> {
  const recorded = (await recordedBase(run)) ?? (await readBaseMarker(workspace));
  if (!OBJECT_ID.test(recorded)) return undefined;
  const contains = (tip: string) =>
    run(['merge-base', '--is-ancestor', '--end-of-options', recorded, tip]).then(
      () => true,
      () => false,
    );
  for (const tip of new Set(tips)) if (await contains(tip)) return recorded;
  return undefined;
}

/** Records the base in the store, and on the workspace for an older runner of the phone. */
export async function recordBase(run: Run, workspace: string, commit: string): Promise<void> {
  await run(['update-ref', '--no-deref', '--end-of-options', BASE_REF, commit]);
  await writeBaseMarker(workspace, commit);
}
