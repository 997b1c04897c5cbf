// Host ids for each Pod's users and groups, as user namespaces would give them: container id c
// (0–65535) runs as host id base + c, and base belongs to one id range alone —
// FIRST_HOST_ID + slot × SLOT_SIZE (slot 7's uid 1001 is 100,701,001). The range follows the Pod's
// workspace claim (its first PersistentVolumeClaim), so a phone's later Pods get the ids its first
// Pod had and its workspace stays theirs; a Pod without a claim gets a range of its own. Which
// slot each claim has is kept in <state>/id-ranges.json (the node agent's user alone).
import type { V1Pod } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Container ids a Pod may name (runAsUser, runAsGroup, fsGroup, supplementalGroups). */
export const CONTAINER_IDS = 65536;
export const FIRST_HOST_ID = 100_000_000;
export const SLOT_SIZE = 100_000;
/** FIRST_HOST_ID + SLOTS × SLOT_SIZE stays below 2^31. */
export const SLOTS = 20_000;

export interface IdRange {
  key: string;
  base: number;
}

/** What a Pod's range follows: its first claim (namespace/name), or the Pod itself. */
export function rangeKey(pod: V1Pod): string {
  const claim = pod.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName;
  return claim ? `claim ${pod.metadata!.namespace}/${claim}` : `pod ${pod.metadata!.uid}`;
}

/** The host id of container id `id` in `range`. */
export function hostId(range: IdRange, id: number): number {
  if (!Number.isInteger(id) || id < 0 || id >= CONTAINER_IDS) {
    throw new Error(`id ${id} is outside the container ids the local node maps (0–${CONTAINER_IDS - 1})`);
  }
  return range.base + id;
}

/** The container id a host id stands for (a host id below every range is taken as one). */
export const containerIdOf = (id: number): number => (id < FIRST_HOST_ID ? id : (id - FIRST_HOST_ID) % SLOT_SIZE);

/** The id in `range` standing for the same container id as `id` (the range's root when that is out of reach). */
export function rehome(range: IdRange, id: number): number {
  const inner = containerIdOf(id);
  return range.base + (inner < CONTAINER_IDS ? inner : 0);
}

const RANGES_FILE = 'id-ranges.json';

/** The range of `key` on the node whose state folder is `stateDir`: the one it had, or a free slot now kept for it. */
export function idRange(stateDir: string, key: string): IdRange {
  const file = join(stateDir, RANGES_FILE);
  const slots = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>) : {};
  let slot = slots[key];
  if (slot === undefined) {
    const used = new Set(Object.values(slots));
    if (used.size >= SLOTS) throw new Error(`the local node has no id range left (${SLOTS} kept in ${file})`);
    // Where the search starts differs by state folder: two stacks on one machine rarely share a range.
    slot = createHash('sha256').update(`${stateDir}\0${key}`).digest().readUInt32BE(0) % SLOTS;
    while (used.has(slot)) slot = (slot + 1) % SLOTS;
    slots[key] = slot;
    writeFileSync(`${file}.new`, JSON.stringify(slots), { mode: 0o600 });
    renameSync(`${file}.new`, file);
  }
  return { key, base: FIRST_HOST_ID + slot * SLOT_SIZE };
}
