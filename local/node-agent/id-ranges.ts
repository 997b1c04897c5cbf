// Host ids for each Pod's users and groups, as user namespaces would give them: container id c
// (0–65535) runs as host id base + c, and base belongs to one id range alone —
// FIRST_HOST_ID + slot × SLOT_SIZE (slot 7's uid 1001 is 100,701,001). The range follows the Pod's
// workspace claim (its first PersistentVolumeClaim), so a phone's later Pods get the ids its first
// Pod had and its workspace stays theirs; a Pod without a claim gets a range of its own. Which
// slot each claim has is kept in <state>/id-ranges.json (the node agent's user alone), with a random
// salt the search for a free slot starts from: no agent can tell which ids another phone will get
// (and squat, say, a folder in the shared /tmp named after them).
import type { V1Pod } from '@kubernetes/client-node';
import { createHash, randomBytes } from 'node:crypto';
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

interface Ranges {
  salt: string;
  slots: Record<string, number>;
}

function readRanges(file: string): Ranges {
  if (!existsSync(file)) return { salt: randomBytes(16).toString('hex'), slots: {} };
  return JSON.parse(readFileSync(file, 'utf8')) as Ranges;
}

/** The range of `key` on the node whose state folder is `stateDir`: the one it had, or a free slot now kept for it. */
export function idRange(stateDir: string, key: string): IdRange {
  const file = join(stateDir, RANGES_FILE);
  const ranges = readRanges(file);
  let slot = ranges.slots[key];
  if (slot === undefined) {
    const used = new Set(Object.values(ranges.slots));
    if (used.size >= SLOTS) throw new Error(`the local node has no id range left (${SLOTS} kept in ${file})`);
    slot = createHash('sha256').update(`${ranges.salt}\0${key}`).digest().readUInt32BE(0) % SLOTS;
    while (used.has(slot)) slot = (slot + 1) % SLOTS;
    ranges.slots[key] = slot;
    writeFileSync(`${file}.new`, JSON.stringify(ranges), { mode: 0o600 });
    renameSync(`${file}.new`, file);
  }
  return { key, base: FIRST_HOST_ID + slot * SLOT_SIZE };
}
